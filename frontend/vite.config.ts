import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The API `gpudeck run` serves; the dev server forwards /api and /ws to it.
const apiTarget = process.env.GPUDECK_API_URL ?? `http://127.0.0.1:${process.env.GPUDECK_PORT ?? "8000"}`;

export default defineConfig({
  plugins: [react()],
  server: {
    port: 5173,
    proxy: {
      "/api": { target: apiTarget, changeOrigin: false },
      "/ws": { target: apiTarget.replace(/^http/, "ws"), ws: true },
    },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
});
