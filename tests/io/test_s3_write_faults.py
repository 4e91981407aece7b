"""S3 errors on write, made on the wire (medscope.testing.s3proxy in front of the loopback moto
server): a few 503 SlowDown answers are retried by the client and the write lands whole; a
store that keeps failing surfaces as an error, never as a half-written or silently missing part."""

from __future__ import annotations

import pytest

from medscope.io import records, storage
from medscope.testing.s3proxy import FailingS3Proxy


def _row(i: int) -> dict:
    return records.reject_row("episodes", "m", f"v{i}", "eval", "failed")


def test_a_few_failed_puts_are_retried_and_the_part_lands(s3_bucket, s3_server):
    proxy = FailingS3Proxy(s3_server, fail_puts=3, match="/rejects/part-")
    try:
        storage.configure(s3_endpoint=proxy.url)
        assert records.write_part("rejects", [_row(1)], f"{s3_bucket}/run/rejects", "k1")
        assert len(proxy.failed) == 3 and all("/rejects/part-k1" in p for p in proxy.failed)
        storage.configure(s3_endpoint=s3_server)  # read straight from the server: it really landed
        assert records.read_table("rejects", f"{s3_bucket}/run/rejects").column("item_id").to_pylist() == ["v1"]
    finally:
        proxy.close()


def test_a_store_that_keeps_failing_raises_and_leaves_no_part(s3_bucket, s3_server, monkeypatch):
    # botocore's default 5 attempts with exponential back-off spent ~11 s waiting here; what is
    # checked (an error, no part) does not depend on how often the client tries, so two attempts
    # through fsspec's own configuration (what a user sets as FSSPEC_S3_CONFIG_KWARGS)
    import fsspec.config

    proxy = FailingS3Proxy(s3_server, fail_puts=1000, match="/rejects/part-", status=500, code="InternalError")
    try:
        with monkeypatch.context() as patched:
            patched.setitem(fsspec.config.conf, "s3", {"config_kwargs": {"retries": {"total_max_attempts": 2}}})
            storage.configure(s3_endpoint=proxy.url)
            with pytest.raises(Exception):
                records.write_part("rejects", [_row(2)], f"{s3_bucket}/run/rejects", "k2")
        assert len(proxy.failed) >= 2  # the client retried before giving up
        storage.configure(s3_endpoint=s3_server)  # (a new client: the default retries again)
        assert records.part_keys(f"{s3_bucket}/run/rejects") == set()
    finally:
        proxy.close()
