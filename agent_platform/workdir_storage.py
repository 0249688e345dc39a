"""Where thread workdirs live: a directory per thread on local disk (the embedded default), or a key
prefix per thread in an S3-compatible bucket that every web process and worker reaches (``WORKDIR_*``).

``agent_platform.workdir`` owns paths and the file semantics; this module owns the storage objects and
the few operations whose safe form differs between a local directory and a bucket.
"""

from __future__ import annotations

import copy
import functools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.core.files.storage import FileSystemStorage, Storage
from django.utils.module_loading import import_string
from storages.backends.s3 import S3Storage

LOCAL = "local"
S3 = "s3"
STREAM_CHUNK_BYTES = 64 * 1024
# What a storage call may raise when the file system or the object store says no.
STORAGE_ERRORS = (OSError, SuspiciousOperation, BotoCoreError, ClientError)


def thread_storage(thread_id: str) -> Storage:
    """The storage rooted at one thread's workdir, from ``WORKDIR_STORAGE``: ``local``, ``s3`` or the
    dotted path of a storage class that takes ``location``."""
    kind = settings.WORKDIR_STORAGE
    if kind == S3:
        storage = copy.copy(_bucket_storage(settings.WORKDIR_S3_BUCKET, settings.WORKDIR_S3_ENDPOINT_URL))
        storage.location = "/".join(
            part for part in (settings.WORKDIR_S3_PREFIX.strip("/"), thread_id) if part
        )
        return storage
    storage_class = FileSystemStorage if kind == LOCAL else import_string(kind)
    return storage_class(location=str(Path(settings.WORKDIR_ROOT) / thread_id))


@functools.cache
def _bucket_storage(bucket: str, endpoint_url: str) -> S3Storage:
    """One S3 storage per process and bucket; each thread's storage is a shallow copy with its own
    ``location`` that shares the boto3 connections (a new boto3 session costs tens of milliseconds).

    Credentials and region come from the standard ``AWS_*`` environment (or an instance role).
    Servers other than AWS itself (MinIO, Ceph RGW, R2, moto) get path-style addressing.
    """
    return S3Storage(
        bucket_name=bucket,
        endpoint_url=endpoint_url or None,
        addressing_style="path" if endpoint_url else None,
        file_overwrite=True,  # save() replaces in place: one PUT, never a renamed copy
        default_acl=None,  # the bucket's own policy (private) decides
        querystring_auth=True,
    )


def is_object_storage(storage: Storage) -> bool:
    """True for buckets, which have keys but no directories and replace a key with one whole PUT."""
    return isinstance(storage, S3Storage)


def storage_stream(storage: Storage, name: str) -> tuple[Iterator[bytes], int]:
    """The bytes of ``name`` as chunks, and their total size, without reading the whole file first.

    Raises ``FileNotFoundError`` (and other ``OSError``) like ``Storage.open``.
    """
    if is_object_storage(storage):
        # S3Storage.open() downloads the whole object before the first read; GetObject streams.
        # The GET's own length is the truth if the object was replaced since open()'s HEAD.
        response = storage.open(name, "rb").obj.get()
        return response["Body"].iter_chunks(STREAM_CHUNK_BYTES), response["ContentLength"]
    handle = storage.open(name, "rb")
    return _chunks_then_close(handle), handle.size


def _chunks_then_close(handle) -> Iterator[bytes]:
    with handle:
        while chunk := handle.read(STREAM_CHUNK_BYTES):
            yield chunk


def storage_delete_all(storage: Storage) -> int:
    """Remove every file under the storage's location (one thread's workdir); returns how many."""
    if isinstance(storage, FileSystemStorage):
        root = Path(storage.location)
        count = sum(len(files) for _, _, files in os.walk(root))  # links are not followed
        shutil.rmtree(root, ignore_errors=True)  # nor here: a link is removed, not its target
        return count
    if is_object_storage(storage):
        # Batched DeleteObjects (1,000 keys a request) over the thread's prefix, trailing slash
        # included so that thread "ab" never takes "abc" with it.
        deleted = storage.bucket.objects.filter(Prefix=f"{storage.location.rstrip('/')}/").delete()
        return sum(len(batch.get("Deleted", ())) for batch in deleted)
    return _delete_tree(storage, "")


def _delete_tree(storage: Storage, directory: str) -> int:
    dirs, files = storage.listdir(directory)
    prefix = f"{directory}/" if directory else ""
    for name in files:
        storage.delete(prefix + name)
    return len(files) + sum(_delete_tree(storage, prefix + sub) for sub in dirs)
