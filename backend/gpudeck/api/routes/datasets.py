from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, status

from gpudeck.api.deps import CurrentUser, SessionDep, SettingsDep
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.datasets import DATASET_NAME_PATTERN, DatasetPublic, TensorPublic
from gpudeck.services import audit
from gpudeck.services import datasets as dataset_service

router = APIRouter(prefix="/api/datasets", tags=["datasets"])

_UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "description": "the file's bytes: a .safetensors or .npy file whose tensors are [N, d_in]",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


def _public(info: dataset_service.DatasetInfo) -> DatasetPublic:
    return DatasetPublic(
        name=info.name,
        format=info.format,
        size_bytes=info.size_bytes,
        tensors=[
            TensorPublic(name=t.name, dtype=t.dtype, shape=list(t.shape)) for t in info.tensors
        ],
        modified_at=info.modified_at,
    )


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    openapi_extra=_UPLOAD_BODY,
    responses={
        409: {"model": ErrorResponse, "description": "a dataset with this name exists"},
        413: {"description": "over the upload size limit"},
    },
)
async def upload_dataset(
    request: Request,
    name: Annotated[str, Query(pattern=DATASET_NAME_PATTERN, description="file name to store")],
    settings: SettingsDep,
    session: SessionDep,
    user: CurrentUser,
) -> DatasetPublic:
    """Stream a file into <data_dir>/datasets/<name>; its header and shape are checked."""
    info = await dataset_service.save_upload(
        settings.data_dir, name, request.stream(), settings.max_dataset_bytes
    )
    audit.record(session, user, audit.DATASET_UPLOAD, f"dataset:{name}", size_bytes=info.size_bytes)
    session.commit()
    return _public(info)


@router.get("")
def list_datasets(settings: SettingsDep, _: CurrentUser) -> list[DatasetPublic]:
    return [_public(info) for info in dataset_service.list_datasets(settings.data_dir)]
