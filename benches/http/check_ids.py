"""Durability check of benches/http/run.sh: looks up every id that wrk saw
answered 201 (files written by disburse.lua or orders.lua) on the restarted
server. Prints "<ids checked> <ids not found>".

    python3 benches/http/check_ids.py [--path TEMPLATE] ADDRESS API_KEY IDS_FILE...

TEMPLATE is the lookup path with {} for the id: /v1/disbursements/{} (the
default) or /v1/orders/{} (order ref codes).
"""

import argparse
import http.client
import threading
import urllib.parse

CONNECTIONS = 4


def check(address, api_key, template, ids, missing):
    host, port = address.split(":")
    connection = http.client.HTTPConnection(host, int(port))
    for id in ids:
        connection.request("GET", template.format(urllib.parse.quote(id, safe="")), headers={"X-API-Key": api_key})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            missing.append(id)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default="/v1/disbursements/{}", help="lookup path, {} for the id")
    parser.add_argument("address")
    parser.add_argument("api_key")
    parser.add_argument("ids_files", nargs="+")
    args = parser.parse_args()
    ids = [line.strip() for path in args.ids_files for line in open(path) if line.strip()]
    missing = []
    workers = [
        threading.Thread(target=check, args=(args.address, args.api_key, args.path, ids[i::CONNECTIONS], missing))
        for i in range(CONNECTIONS)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(len(ids), len(missing))


if __name__ == "__main__":
    main()
