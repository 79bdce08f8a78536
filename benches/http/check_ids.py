"""Durability check of benches/http/run.sh: looks up every disbursement id
that wrk saw answered 201 (files written by disburse.lua) on the restarted
server. Prints "<ids checked> <ids not found>".

    python3 benches/http/check_ids.py ADDRESS API_KEY IDS_FILE...
"""

import http.client
import sys
import threading

CONNECTIONS = 4


def check(address, api_key, ids, missing):
    host, port = address.split(":")
    connection = http.client.HTTPConnection(host, int(port))
    for id in ids:
        connection.request("GET", f"/v1/disbursements/{id}", headers={"X-API-Key": api_key})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            missing.append(id)


def main():
    address, api_key, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    ids = [line.strip() for path in paths for line in open(path) if line.strip()]
    missing = []
    workers = [
        threading.Thread(target=check, args=(address, api_key, ids[i::CONNECTIONS], missing))
        for i in range(CONNECTIONS)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(len(ids), len(missing))


if __name__ == "__main__":
    main()
