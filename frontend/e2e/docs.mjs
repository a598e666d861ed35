// /docs in Debian's Chromium with the network cut off: Swagger UI must come from GPUDeck's own
// assets (no CDN), show the bearer scheme ("Authorize"), and load the schema with the token a
// signed-in dashboard holds. Run: GPUDECK_BIN=... node e2e/docs.mjs (exits non-zero on failure).
import assert from "node:assert/strict";
import { launchBrowser, startServer, waitFor } from "./lib.mjs";

const server = await startServer({ devices: "2x16GiB" });
const { context, close } = await launchBrowser();
let failed = false;
try {
  const page = await context.newPage();
  page.on("console", (m) => process.env.E2E_DEBUG && console.log("console:", m.text()));
  page.on("pageerror", (e) => console.log("pageerror:", e.message));
  const offSite = [];
  // Offline: any request that is not to GPUDeck itself fails, as it would with no network.
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.origin === server.baseUrl) return route.continue();
    offSite.push(url.href);
    return route.abort("internetdisconnected");
  });
  const schemaStatus = [];
  page.on("response", (r) => r.url().endsWith("/openapi.json") && schemaStatus.push(r.status()));

  // Not signed in: the page asks for a token instead of showing a raw 401.
  await page.goto(`${server.baseUrl}/docs`);
  await page.locator("#gpudeck-token").waitFor({ state: "visible" });

  // Signed in, as the dashboard does it: the token from the sign-in link lands in this tab's
  // sessionStorage, and /docs in the same tab uses it.
  await page.goto(`${server.baseUrl}/docs#token=${server.token}`);
  await page.locator(".swagger-ui .info .title").waitFor({ timeout: 30000 });
  assert.match(await page.locator(".swagger-ui .info .title").innerText(), /GPUDeck/);
  assert.ok(!page.url().includes("token="), "the token is removed from the address bar");
  await waitFor(async () => (await page.locator(".opblock").count()) > 10, { what: "operations" });
  assert.ok(await page.locator('[data-path="/api/jobs/{job_id}/logs"]').count(), "a job route is listed");
  // The bearer scheme: "Authorize" shows it, already filled in with the session's token.
  await page.locator("button.authorize").first().click();
  const dialog = page.locator(".auth-container");
  await dialog.first().waitFor();
  const auth = await dialog.first().innerText();
  if (process.env.E2E_DEBUG) console.log(auth);
  assert.match(auth, /bearer\s+\(http, Bearer\)/);
  assert.match(auth, /Authorized/);
  await page.keyboard.press("Escape");

  await page.goto(`${server.baseUrl}/docs`);
  await page.locator(".swagger-ui .info .title").waitFor({ timeout: 30000 });
  assert.deepEqual([...new Set(schemaStatus)], [200], "the schema was fetched with the token");
  assert.deepEqual(offSite, [], "nothing was loaded from outside GPUDeck");
  console.log("  ok    /docs renders offline with the bearer scheme");
} catch (error) {
  failed = true;
  console.log(`  FAIL  /docs: ${error?.stack ?? error}`);
} finally {
  await close();
  await server.stop();
}
process.exit(failed ? 1 : 0);
