"""moto's server, answering one request at a time.

moto's DynamoDB TransactWriteItems undoes a failed transaction by restoring a
copy of the tables taken when it started; on the threaded server that restore
can erase a concurrent transaction's commit, which real DynamoDB never does.
Serving requests one by one gives the tests the serialized transactions the
real service guarantees.

    python tests/moto_serial.py HOST PORT
"""

import os
import sys

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, app, threaded=False, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
