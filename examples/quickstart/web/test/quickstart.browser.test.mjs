// The quickstart, as a stranger runs it, in headless Chromium: a Gatehouse dev server (fresh data
// directory, a free port), the quickstart binary reading its bootstrap.json, then the page signs
// in with a code read from the dev outbox and shows what GET /api/me answered. Then /api/me is
// called without a token and with a tampered one (401 both).
//
// Needs GATEHOUSE_BIN and QUICKSTART_BIN (built binaries; ../test.sh builds them), Debian's
// chromium at /usr/bin/chromium (or CHROMIUM_PATH) and `npm ci` in this directory.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

const WEB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const EMAIL = `quickstart-${Date.now().toString(36)}@example.com`;

function need(name) {
  const v = process.env[name];
  if (!v || !fs.existsSync(v)) throw new Error(`${name} must name a built binary (examples/quickstart/test.sh builds it)`);
  return v;
}

const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
if (!fs.existsSync(chromiumPath)) {
  throw new Error(`Chromium is not at ${chromiumPath}: install it (apt-get install chromium) or set CHROMIUM_PATH`);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-quickstart-"));
const children = [];
let boot, appURL, browser;

/** start runs a binary with its output in tmp/<name>.log, and returns the child and a reader of that log. */
function start(name, bin, args) {
  const logPath = path.join(tmp, `${name}.log`);
  const fd = fs.openSync(logPath, "w");
  // The dev server keeps everything in its data directory (SQLite), whatever the caller's environment says.
  const env = { ...process.env };
  delete env.GATEHOUSE_DATABASE_URL;
  const child = spawn(bin, args, { env, stdio: ["ignore", fd, fd] });
  fs.closeSync(fd);
  children.push(child);
  return { child, log: () => fs.readFileSync(logPath, "utf8") };
}

/** until polls fn (bounded) until it returns a truthy value. */
async function until(fn, what, timeout = 60_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch {}
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

before(async () => {
  const dataDir = path.join(tmp, "data");
  const gh = start("gatehouse", need("GATEHOUSE_BIN"), ["serve", "--dev", "--data-dir", dataDir, "--addr", "127.0.0.1:0"]);
  boot = await until(() => JSON.parse(fs.readFileSync(path.join(dataDir, "bootstrap.json"), "utf8")), `bootstrap.json\n${gh.log()}`);
  await until(async () => (await fetch(boot.base_url + "/readyz")).ok, "Gatehouse /readyz");

  // The quickstart as the README runs it, on a free port instead of 3000.
  const qs = start("quickstart", need("QUICKSTART_BIN"), ["-addr", "127.0.0.1:0", "-bootstrap", path.join(dataDir, "bootstrap.json"), "-web", WEB_DIR]);
  appURL = await until(() => qs.log().match(/Quickstart: (http:\/\/localhost:\d+)/)?.[1], "the quickstart's address");

  // The dev app allows http://localhost:3000; allow this port too, as the README says to.
  const res = await fetch(`${boot.base_url}/v1/apps/${boot.app_id}`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${boot.api_secret}`, "Content-Type": "application/json" },
    body: JSON.stringify({ app: { allowed_origins: [appURL] } }),
  });
  assert.equal(res.status, 200, `PATCH allowed_origins: ${await res.text()}`);

  const { chromium } = await import("playwright-core");
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  for (const c of children) c.kill("SIGTERM");
  await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode ? null : new Promise((r) => c.once("exit", r)))));
  if (process.env.QUICKSTART_KEEP) console.error(`kept ${tmp}`);
  else fs.rmSync(tmp, { recursive: true, force: true });
});

let access, userId;

test("the page signs in with an e-mail code and shows what the backend verified", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(appURL);

  await page.locator("#email").fill(EMAIL);
  await page.locator("#send").click();
  await page.locator("#verify-form").waitFor({ state: "visible" });

  const outbox = await (await fetch(`${boot.base_url}/dev/outbox?to=${encodeURIComponent(EMAIL)}&wait_ms=5000`)).json();
  const code = outbox.messages.find((m) => m.code)?.code;
  assert.ok(code, `no code in the outbox: ${JSON.stringify(outbox)}`);
  await page.locator("#code").fill(code);
  await page.locator("#verify").click();

  await page.locator("#backend").filter({ hasText: "200" }).waitFor();
  assert.equal(await page.locator("#user-email").textContent(), EMAIL);
  userId = await page.locator("#user-id").textContent();
  const me = JSON.parse((await page.locator("#backend").textContent()).replace(/^200 /, ""));
  assert.equal(me.user_id, userId);
  assert.equal(me.app_id, boot.app_id);
  assert.deepEqual(me.signed_in, ["email_otp"]);
  assert.ok(me.session_id);

  // A reload keeps the session (the SDK stored it) and asks the backend again.
  await page.reload();
  await page.locator("#backend").filter({ hasText: "200" }).waitFor();
  access = await page.evaluate(async () => (await scute.getAuthToken()).data.access);
  assert.deepEqual(errors, []);
  await page.close();
});

test("GET /api/me refuses a request without a valid access token", async () => {
  assert.ok(access, "the sign-in test ran first");
  const me = (headers) => fetch(`${appURL}/api/me`, { headers });

  const good = await me({ Authorization: `Bearer ${access}` });
  assert.equal(good.status, 200);
  assert.equal((await good.json()).user_id, userId);

  const none = await me({});
  assert.equal(none.status, 401);

  // Another user id in the claims, the signature unchanged.
  const [h, p, s] = access.split(".");
  const claims = JSON.parse(Buffer.from(p, "base64url").toString());
  claims.uuid = claims.sub = "00000000-0000-0000-0000-000000000000";
  const tampered = [h, Buffer.from(JSON.stringify(claims)).toString("base64url"), s].join(".");
  const bad = await me({ Authorization: `Bearer ${tampered}` });
  assert.equal(bad.status, 401);
  assert.ok(!(await bad.text()).includes(tampered), "the 401 repeats the token");
});
