# One image for api, worker and sampler. The dashboard is built in a node stage.
FROM node:20-slim AS dashboard
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
RUN npm run build

FROM python:3.11-slim
WORKDIR /app
# A CUDA build of torch comes from the default index here: GPU nodes need it.
COPY backend/ /app/backend/
COPY README.md /app/README.md
RUN pip install --no-cache-dir /app/backend
COPY --from=dashboard /src/frontend/dist /app/frontend/dist
ENV GPUDECK_DATA_DIR=/data GPUDECK_DASHBOARD_DIR=/app/frontend/dist
VOLUME ["/data"]
EXPOSE 8000
CMD ["gpudeck", "api"]
