#!/usr/bin/env python3
"""Time per page of `read_display_page`, the MCP Apps View's page tool:
`stdio` with a host that declares MCP Apps, a run that writes a table of
ROWS rows to /work, then PAGES pages of 25 rows read in a row (the first,
then later ones), unsorted and sorted by a column. Prints one Markdown row.

    python3 benches/display_pages.py BINARY [--rows 100000] [--pages 10]
"""
import argparse
import os
import statistics
import tempfile
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from stdio_client import StdioClient  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--pages", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        client = StdioClient(args.binary, data_dir, "pages", protocol="2025-11-25", capabilities={
            "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
        request = client.request
        code = (f"const rows = Array.from({{length: {args.rows}}}, (_, i) => "
                "({ id: i, region: ['north', 'south', 'east'][i % 3], amount: (i * 7919) % 1000, note: 'row ' + i })); "
                "require('fs').writeFileSync('rows.json', JSON.stringify(rows)); rows.length")
        answer = request("tools/call", {"name": "run_js", "arguments": {"code": code, "heap_memory_max_mb": 512}})
        outcome = answer["result"]["structuredContent"]
        assert outcome["status"] == "completed", outcome
        uri = f"mcp-v8://heaps/{outcome['heap']}/files/rows.json"

        def pages(extra):
            times = []
            for n in range(args.pages):
                started = time.perf_counter()
                page = request("tools/call", {"name": "read_display_page", "arguments": {
                    "uri": uri, "offset": n * 25 * 100, "limit": 25, **extra}})
                times.append((time.perf_counter() - started) * 1000)
                assert not page["result"].get("isError"), page
            return times

        plain = pages({})
        sorted_ = pages({"sort_by": "amount", "descending": True})
        print(f"| {args.rows} | {plain[0]:.0f} | {statistics.median(plain[1:]):.1f} "
              f"| {sorted_[0]:.0f} | {statistics.median(sorted_[1:]):.1f} |")
        client.close()


if __name__ == "__main__":
    main()
