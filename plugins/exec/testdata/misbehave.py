#!/usr/bin/env python3
# A plugin that breaks the protocol on purpose, chosen by resource id:
# "garbage" prints a line that is not JSON-RPC, "crash" exits, "slow" takes
# ten seconds; anything else is answered. With argument "bad-describe" it
# answers describe without types.
import json
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else ""
for line in sys.stdin:
    req = json.loads(line)
    rid = (req.get("params") or {}).get("resourceId")
    if req["method"] == "describe":
        result = {} if mode == "bad-describe" else {"types": [{"name": "thing"}]}
    elif rid == "garbage":
        print("Traceback (most recent call last): oops", flush=True)
        continue
    elif rid == "crash":
        print("fatal: lost my marbles", file=sys.stderr, flush=True)
        sys.exit(3)
    elif rid == "slow":
        time.sleep(10)
        result = {"outputs": {}}
    elif rid == "no-result":
        print(json.dumps({"jsonrpc": "2.0", "id": req["id"]}), flush=True)
        continue
    elif rid == "outputs-list":
        result = {"outputs": [1, 2]}
    else:
        result = {"outputs": {"pid": __import__("os").getpid()}}
    print(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": result}), flush=True)
