"""Runs AWS's own SAM transform (the aws-sam-translator package that
`sam deploy` and CloudFormation use) over a template, offline.

    sam_transform.py TEMPLATE OUTPUT.json '{"Parameter": "value", ...}'

Writes the CloudFormation template the transform produces. CodeUri is set
to an S3 URI first, as `sam package` does before CloudFormation sees the
template. Managed policies are not looked up (the template names none).
"""

import json
import os
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    """The translator asks IAM for managed policy ARNs only when a template
    names managed policies; this one names none, so nothing is fetched."""

    def load(self):
        return {}


def main():
    source, output, parameters = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    with open(source) as f:
        template = yaml_parse(f.read())
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = "s3://artifacts/mcp-v8-lambda.zip"
    region = parameters.setdefault("AWS::Region", "eu-west-1")
    parameters.setdefault("AWS::AccountId", "123456789012")
    parameters.setdefault("AWS::Partition", "aws")
    os.environ["AWS_DEFAULT_REGION"] = region
    transformed = transform(template, parameters, NoManagedPolicies())
    with open(output, "w") as f:
        json.dump(transformed, f, indent=1, default=str)


if __name__ == "__main__":
    main()
