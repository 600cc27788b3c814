#!/usr/bin/env python3
"""filestore: a Cairn plugin, out of process, that keeps small text files.

It speaks Cairn's plugin protocol: JSON-RPC 2.0 over standard input and
output, one JSON object per line (see docs/plugins.md). It serves one
resource type, "file", stored as <root>/<resource id>/<name>, where root is
the first argument or the FILESTORE_ROOT environment variable.

Every call is idempotent by resource id, as the protocol requires: creating
a file that exists rewrites it with the same content, destroying one that is
gone succeeds. Logs go to standard error; standard output carries answers
only.
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile

NOT_FOUND = -32004  # observe of a resource that does not exist
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
PARSE_ERROR = -32700
INVALID_REQUEST = -32600

FILE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "content"],
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
                 "description": "file name inside the resource's own directory"},
        "content": {"type": "string", "maxLength": 1048576},
    },
}


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def log(*parts):
    print("filestore:", *parts, file=sys.stderr, flush=True)


class Store:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        os.makedirs(self.root, exist_ok=True)

    def _dir(self, resource_id):
        # Resource ids are 32 hex characters; refuse anything that could
        # leave the root.
        if not resource_id or not all(c in "0123456789abcdefABCDEF-_." for c in resource_id) or resource_id.startswith("."):
            raise Failure(INVALID_PARAMS, "resourceId %r is not a plain id" % (resource_id,))
        return os.path.join(self.root, resource_id)

    @staticmethod
    def _props(params):
        props = params.get("properties") or {}
        name, content = props.get("name"), props.get("content")
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise Failure(INVALID_PARAMS, "properties.name must be a plain file name")
        if not isinstance(content, str):
            raise Failure(INVALID_PARAMS, "properties.content must be a string")
        return name, content

    def _outputs(self, path):
        with open(path, "rb") as f:
            data = f.read()
        return {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    def _existing(self, params):
        d = self._dir(params.get("resourceId"))
        if os.path.isdir(d):
            for entry in sorted(os.listdir(d)):
                if not entry.startswith(".tmp"):
                    return os.path.join(d, entry)
        return None

    def create(self, params):
        name, content = self._props(params)
        d = self._dir(params.get("resourceId"))
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, name)
        # Write to a temporary file and rename it, so a crash never leaves a
        # half-written file behind.
        fd, tmp = tempfile.mkstemp(prefix=".tmp", dir=d)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(tmp, path)
        return self._outputs(path)

    def start(self, params):
        path = self._existing(params)
        if path is None:
            raise Failure(NOT_FOUND, "file for resource %s does not exist; create it first" % params.get("resourceId"))
        return self._outputs(path)

    stop = start

    def update(self, params):
        # The file is written under its (maybe new) name, then any other
        # file of the resource goes: an update repeated changes nothing.
        name, _ = self._props(params)
        d = self._dir(params.get("resourceId"))
        outputs = self.create(params)
        for entry in os.listdir(d):
            if entry != name and not entry.startswith(".tmp"):
                os.remove(os.path.join(d, entry))
        return outputs

    def destroy(self, params):
        shutil.rmtree(self._dir(params.get("resourceId")), ignore_errors=True)
        return None

    def observe(self, params):
        return self.start(params)


def answer(msg_id, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": msg_id}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FILESTORE_ROOT")
    if not root:
        log("give the storage directory as the first argument or in FILESTORE_ROOT")
        return 2
    store = Store(root)
    log("serving files under", store.root)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            answer(None, error={"code": PARSE_ERROR, "message": "not JSON: %s" % e})
            continue
        if not isinstance(req, dict) or req.get("jsonrpc") != "2.0" or "method" not in req:
            answer(req.get("id") if isinstance(req, dict) else None,
                   error={"code": INVALID_REQUEST, "message": "not a JSON-RPC 2.0 request"})
            continue
        msg_id, method, params = req.get("id"), req["method"], req.get("params") or {}
        try:
            if method == "describe":
                result = {"types": [{"name": "file", "schema": FILE_SCHEMA, "updateInPlace": True,
                                     "description": "A small text file kept by the filestore plugin."}]}
            elif method in ("create", "start", "stop", "update", "destroy", "observe"):
                if params.get("type") != "file":
                    raise Failure(INVALID_PARAMS, "unknown resource type %r" % params.get("type"))
                result = {"outputs": getattr(store, method)(params)}
            else:
                raise Failure(METHOD_NOT_FOUND, "unknown method %r" % method)
            answer(msg_id, result=result)
        except Failure as f:
            answer(msg_id, error={"code": f.code, "message": str(f)})
        except OSError as e:
            answer(msg_id, error={"code": -32000, "message": "%s: %s" % (e.filename or "storage", e.strerror)})
    log("input closed; exiting")
    return 0


if __name__ == "__main__":
    sys.exit(main())
