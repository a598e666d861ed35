from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, status

from gpudeck.api.deps import CurrentUser, SessionDep, SettingsDep
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.datasets import DATASET_NAME_PATTERN, DatasetPublic
from gpudeck.services.accounts import audit
from gpudeck.services.data import datasets as dataset_service

router = APIRouter(prefix="/api/datasets", tags=["datasets"])

_UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "description": "the file's bytes: a .safetensors or .npy file whose tensors are [N, d_in]",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


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
    return DatasetPublic.model_validate(info)


@router.get("")
def list_datasets(settings: SettingsDep, _: CurrentUser) -> list[DatasetPublic]:
    return [
        DatasetPublic.model_validate(info)
        for info in dataset_service.list_datasets(settings.data_dir)
    ]
