// Push approval on the hosted pages (docs/hosted-pages.md, "Push approval")
// in headless Chromium, against the real binary: two browsers of one user.
// Browser A signs in (no second factor yet: nobody else could approve) and
// stays on /account/{app}; browser B signs in by code and its second factor
// is a push: B's page shows the match number and waits. A's account page
// lists the request; a wrong number is refused; the right one approves, and
// B's page goes on by itself (hosted.js polls the status route) to the
// app's callback. A third browser's request is denied in A, and its page
// goes back to the start by itself. Every page passes axe-core, and no page
// reports a CSP violation. With GATEHOUSE_HOSTED_SHOTS=<dir> it saves the
// screenshots docs/hosted-pages.md shows.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

import { startGatehouse, gatehouseBin, chromiumPath, launchChromium, serveApp } from "./harness.mjs";

gatehouseBin();
chromiumPath(); // fail at once, with how to get it, when Chromium is missing

const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const shotsDir = process.env.GATEHOUSE_HOSTED_SHOTS || "";

let gh, browser, appServers, origin, app;
const cspViolations = [];

before(async () => {
  gh = await startGatehouse();
  const served = await serveApp({ paths: ["/", "/callback"], page: () => "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Push test app</title></head><body><h1>Push test app</h1></body></html>" });
  appServers = served.servers;
  origin = served.origin;
  app = await gh.createApp({
    name: "Push test app", origin, callback_url: `${origin}/callback`, email_auth_type: "otp", allowed_identifiers: ["email"],
    mfa_policy: "required", mfa_methods_allowed: ["push"],
  });
  assert.ok(app.id, `created app: ${JSON.stringify(app)}`);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  for (const s of appServers ?? []) s.close();
  if (gh) {
    await gh.stop();
    gh.cleanup();
  }
  assert.deepEqual(cspViolations, [], "no CSP violation on any page");
});

async function context() {
  const ctx = await browser.newContext({ viewport: { width: 760, height: 640 } });
  await ctx.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      console.error(`securitypolicyviolation: ${e.violatedDirective} blocked ${e.blockedURI}`));
  });
  ctx.on("page", (page) => {
    page.on("console", (m) => {
      if (/securitypolicyviolation|Content Security Policy|Refused to/i.test(m.text())) cspViolations.push(`${page.url()}: ${m.text()}`);
    });
  });
  return ctx;
}

async function audit(page, what) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => globalThis.axe.run(document, { resultTypes: ["violations"] }));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`), [], `${what}: accessibility`);
}

async function shot(page, name) {
  if (shotsDir) await page.screenshot({ path: path.join(shotsDir, `${name}.png`), fullPage: true });
}

/** codeStep opens the login page (with query), sends a code to email and enters it. */
async function codeStep(page, email, query = "") {
  await page.goto(`${gh.base}/login/${app.id}${query}`);
  const mark = await gh.outboxMark(email);
  await page.getByLabel(/e-mail/i).fill(email);
  await page.getByRole("button", { name: /code/i }).click();
  await page.getByLabel("Code").waitFor();
  await page.getByLabel("Code").fill(await gh.lastCode(email, { after: mark }));
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** notNow passes the "add a passkey to this device?" offer when the page shows it. */
async function notNow(page) {
  const b = page.getByRole("button", { name: "Not now" });
  if (await b.count()) await b.click();
}

test("a push as the second factor: approved on the account page of another browser, the waiting page goes on by itself", async () => {
  const email = "pat@example.com";
  // A: the first sign-in has no other device to approve it, so it asks for none.
  const a = await context();
  const pa = await a.newPage();
  await codeStep(pa, email, `?return=${encodeURIComponent(`/account/${app.id}`)}`);
  await notNow(pa);
  await pa.waitForURL(`${gh.base}/account/${app.id}`);
  assert.equal(await pa.locator("#requests").count(), 0, "no request before any");

  // B: its second factor is a push; the page shows the number and waits.
  const b = await context();
  const pb = await b.newPage();
  await codeStep(pb, email);
  await pb.getByRole("heading", { name: "Approve on your other device" }).waitFor();
  const number = (await pb.locator("#match").innerText()).trim();
  assert.match(number, /^\d+$/);
  await pb.getByText("Waiting for your approval…").waitFor(); // the script runs
  await audit(pb, "push waiting page");
  await shot(pb, "push-waiting");

  // A: the request is listed (after a reload); a wrong number is refused.
  await pa.reload();
  const req = pa.locator("#requests");
  await req.waitFor();
  await audit(pa, "account page with a request");
  await shot(pa, "push-approve");
  const wrong = String((Number(number) + 1) % 100);
  await req.getByLabel("Number").fill(wrong);
  await req.getByRole("button", { name: "Approve" }).click();
  await pa.getByRole("alert").filter({ hasText: "not the number" }).waitFor();
  await pa.locator("#requests").getByLabel("Number").fill(number);
  await pa.locator("#requests").getByRole("button", { name: "Approve" }).click();
  await pa.getByRole("status").filter({ hasText: "Approved" }).waitFor();
  assert.equal(await pa.locator("#requests").count(), 0, "answered: no longer listed");

  // B goes on by itself (its script's next poll) to the app's callback.
  await pb.waitForURL((u) => u.href.startsWith(`${origin}/callback`), { timeout: 15_000 });
  const token = new URL(pb.url()).searchParams.get("sct_magic");
  assert.ok(token, `no sct_magic in ${pb.url()}`);
  const res = await fetch(`${gh.base}/v1/auth/${app.id}/magic_links/authenticate`, {
    method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }),
  });
  const set = await res.json();
  assert.equal(res.status, 200, JSON.stringify(set));
  const claims = JSON.parse(Buffer.from(set.access.split(".")[1], "base64url").toString());
  assert.ok(claims.amr.includes("push"), `amr ${JSON.stringify(claims.amr)}`);

  // C: denied in A; C's page goes back to the start by itself.
  const c = await context();
  const pc = await c.newPage();
  await codeStep(pc, email);
  await pc.getByRole("heading", { name: "Approve on your other device" }).waitFor();
  await pa.reload();
  await pa.locator("#requests").getByRole("button", { name: "Deny, it wasn't me" }).click();
  await pa.getByRole("status").filter({ hasText: "Denied" }).waitFor();
  await pc.getByRole("alert").filter({ hasText: "denied on your other device" }).waitFor({ timeout: 15_000 });
  await pc.getByLabel(/e-mail/i).waitFor(); // the login page again
  await audit(pc, "login page after a denial");

  await a.close();
  await b.close();
  await c.close();
});
