"""A loopback S3-compatible server (moto) for the benches that measure S3 paths (``compact``,
``faults``): started on a free port, ``storage`` pointed at it, the buckets created, and all of it
undone on exit. Credentials are the loopback server's, never real ones. Needs the dev extras."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import urllib.request
from collections.abc import Iterator


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (bound once and released).

    Returns
    -------
    int
        The port number.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def loopback_s3(*buckets: str) -> Iterator[str]:
    """Yield the endpoint URL of a fresh moto server holding ``buckets``; ``storage`` reads and
    writes ``s3://`` through it until the block exits.

    Parameters
    ----------
    *buckets : str
        Names of the buckets to create.

    Yields
    ------
    str
        The endpoint URL, ``http://127.0.0.1:<port>``.
    """
    import boto3
    from moto.server import ThreadedMotoServer

    from medscope.io import storage

    for k, v in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"), ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(k, v)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"))
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        for bucket in buckets:
            client.create_bucket(Bucket=bucket)
        storage.configure(s3_endpoint=endpoint)
        yield endpoint
    finally:
        storage.configure(s3_endpoint=None)
        server.stop()
