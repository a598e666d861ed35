// Gzipped size of the production JS in dist/ (what a browser downloads); fails over the budget.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const BUDGET_BYTES = 250 * 1000;
const assets = join(dirname(fileURLToPath(import.meta.url)), "../dist/assets");
let total = 0;
for (const name of readdirSync(assets)
  .filter((n) => n.endsWith(".js"))
  .sort()) {
  const raw = readFileSync(join(assets, name));
  const gz = gzipSync(raw, { level: 9 }).length;
  total += gz;
  console.log(`  ${name}: ${(raw.length / 1000).toFixed(1)} kB raw, ${(gz / 1000).toFixed(1)} kB gzipped`);
}
console.log(`bundle: ${(total / 1000).toFixed(1)} kB gzipped JS (budget ${BUDGET_BYTES / 1000} kB)`);
if (total > BUDGET_BYTES) {
  console.error("bundle: over budget");
  process.exit(1);
}
