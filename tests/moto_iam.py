"""Creates IAM users on a moto server, each holding exactly one inline
policy, and prints their access keys as JSON (the tests' credentials for a
moto that enforces IAM).

    moto_iam.py ENDPOINT '{"user-name": <policy document>, ...}'
"""

import json
import sys

import boto3


def main():
    endpoint, users = sys.argv[1], json.loads(sys.argv[2])
    iam = boto3.client(
        "iam",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    keys = {}
    for name, policy in users.items():
        iam.create_user(UserName=name)
        iam.put_user_policy(
            UserName=name, PolicyName="function", PolicyDocument=json.dumps(policy)
        )
        key = iam.create_access_key(UserName=name)["AccessKey"]
        keys[name] = {"id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
    print(json.dumps(keys))


if __name__ == "__main__":
    main()
