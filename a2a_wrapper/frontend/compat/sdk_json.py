"""a2a-sdk prints each event of a stream (JSON-RPC's and HTTP+JSON's SSE, both protocol versions) with
`json_utils.dumps`, the standard library's `json.dumps`; here with fast_json.dumps, as compact JSON. The
dispatchers call it by the module's name (a2a-sdk 1.3.0; tests/test_fast_json.py checks that they still do)."""

from a2a.utils import json_utils

from a2a_wrapper import fast_json


def use_fast_json() -> None:
    json_utils.dumps = fast_json.dumps
