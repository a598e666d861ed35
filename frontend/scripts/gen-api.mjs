// The typed client's schema, generated from the backend's OpenAPI document by openapi-typescript.
//   node scripts/gen-api.mjs           writes src/client/schema.d.ts
//   node scripts/gen-api.mjs --check   fails when schema.d.ts is not what generation gives (stale)
// While scripts/api-overlay.json exists, the paths and models it lists are added to the document
// where the backend does not have them yet (the backend's own always win); the file says so.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = process.env.GPUDECK_OPENAPI ?? join(root, "../backend/openapi.json");
const target = join(root, "src/client/schema.d.ts");
const overlayPath = join(root, "scripts/api-overlay.json");
const check = process.argv.includes("--check");

if (!existsSync(source)) {
  console.error(`gen-api: ${source} does not exist; dump it first (make openapi)`);
  process.exit(1);
}
const doc = JSON.parse(readFileSync(source, "utf8"));
let provisional = [];
if (existsSync(overlayPath)) {
  const overlay = JSON.parse(readFileSync(overlayPath, "utf8"));
  doc.components ??= { schemas: {} };
  for (const [path, item] of Object.entries(overlay.paths ?? {})) {
    if (!doc.paths[path]) {
      doc.paths[path] = item;
      provisional.push(path);
    }
  }
  for (const [name, schema] of Object.entries(overlay.schemas ?? {})) {
    if (!doc.components.schemas[name]) {
      doc.components.schemas[name] = schema;
      provisional.push(name);
    }
  }
}
const dir = mkdtempSync(join(tmpdir(), "gpudeck-gen-api-"));
try {
  const merged = join(dir, "openapi.json");
  const out = join(dir, "schema.d.ts");
  writeFileSync(merged, JSON.stringify(doc));
  execFileSync(join(root, "node_modules/.bin/openapi-typescript"), [merged, "--default-non-nullable", "false", "-o", out], {
    stdio: "ignore",
  });
  const banner =
    provisional.length > 0
      ? `/**\n * PROVISIONAL parts (from scripts/api-overlay.json, not yet served by the backend):\n${provisional
          .map((p) => ` *   ${p}\n`)
          .join("")} */\n`
      : "";
  const fresh = banner + readFileSync(out, "utf8");
  if (check) {
    const current = existsSync(target) ? readFileSync(target, "utf8") : "";
    if (current !== fresh) {
      console.error("check:api: src/client/schema.d.ts is stale; run `npm run gen:api` and commit the result");
      process.exit(1);
    }
    console.log(
      `check:api: the generated client matches the backend's schema${provisional.length ? ` (+${provisional.length} provisional)` : ""}`,
    );
  } else {
    writeFileSync(target, fresh);
    console.log(`gen-api: wrote src/client/schema.d.ts${provisional.length ? `; provisional: ${provisional.join(", ")}` : ""}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
