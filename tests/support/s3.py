"""An S3-protocol server on loopback (moto's server mode, an ephemeral port) and the fixtures that put
thread workdirs in a bucket on it, so every workdir guarantee is tested on local disk and on S3."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest
from moto.server import ThreadedMotoServer

BUCKET = "agent-platform-workdirs"
# Credentials the loopback server accepts; the standard variables, as a deployment sets them.
AWS_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "test-access-key",
    "AWS_SECRET_ACCESS_KEY": "test-secret-key",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str
    bucket: str

    def client(self):
        return boto3.client("s3", endpoint_url=self.endpoint_url, **_client_credentials())

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return sorted(entry["Key"] for page in pages for entry in page.get("Contents", ()))

    def get(self, key: str) -> dict:
        return self.client().get_object(Bucket=self.bucket, Key=key)


def _client_credentials() -> dict[str, str]:
    return {
        "aws_access_key_id": AWS_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": AWS_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
        "region_name": AWS_ENVIRONMENT["AWS_DEFAULT_REGION"],
    }


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One loopback S3 server for the session, with an empty bucket; tests keep apart by prefix."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line per S3 request in failure output
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    saved = {name: os.environ.get(name) for name in AWS_ENVIRONMENT}
    os.environ.update(AWS_ENVIRONMENT)  # what the S3 storage reads, as in a deployment
    try:
        s3 = S3Server(endpoint_url=f"http://{host}:{port}", bucket=BUCKET)
        s3.client().create_bucket(Bucket=BUCKET)
        yield s3
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        server.stop()


@pytest.fixture
def s3_workdirs(settings, s3_server) -> str:
    """Workdirs in the loopback bucket under a prefix of this test's own; returns the prefix."""
    prefix = f"test-{uuid.uuid4().hex[:12]}"
    settings.WORKDIR_STORAGE = "s3"
    settings.WORKDIR_S3_BUCKET = s3_server.bucket
    settings.WORKDIR_S3_ENDPOINT_URL = s3_server.endpoint_url
    settings.WORKDIR_S3_PREFIX = prefix
    return prefix


@pytest.fixture(params=["local", "s3"])
def workdir_storage(request, settings, tmp_path) -> str:
    """Run the test once with workdirs on local disk and once in a bucket on the loopback S3 server."""
    settings.WORKDIR_ROOT = tmp_path / "workdirs"
    if request.param == "s3":
        request.getfixturevalue("s3_workdirs")
    else:
        settings.WORKDIR_STORAGE = "local"
    return request.param
