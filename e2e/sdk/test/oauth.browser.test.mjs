// Social sign-in (issue 25, client-compat C25 and §6.4) in a real browser:
// the unmodified @scute/core 1.2.2, bundled at test time, runs in a page of
// a test app on http://localhost:<port>; signInWithOAuthProvider sends
// headless Chromium to Gatehouse, on to a real OpenID provider (e2e/testop:
// zitadel/oidc's certified OP, whose login form the test fills in), back to
// Gatehouse's callback and on to the app's callback page, where the SDK's
// verifyMagicLink signs the user in. Also: the provider's button data in
// getAppData, the refusals (an unverified address, a callback URL outside
// the app's origins) and the provider's secret absent from the server's log.
// The hosted login page's button for the provider takes the same way.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import readline from "node:readline";

import { startGatehouse, gatehouseBin, decodeJwt, chromiumPath, launchChromium, bundleSdk, serveApp } from "./harness.mjs";

gatehouseBin();
chromiumPath(); // fail at once, with how to get it, when Chromium is missing

/** testopBin is the provider's binary (e2e/testop), built by run.sh. */
function testopBin() {
  const bin = process.env.GATEHOUSE_TESTOP_BIN;
  if (!bin) throw new Error("GATEHOUSE_TESTOP_BIN is not set: build e2e/testop (go build -o /tmp/testop ./e2e/testop) and point it there (run.sh does)");
  return bin;
}
testopBin();

const OP_SECRET = `op-secret-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

/** The app's page: one ScuteClient; on /callback it finishes the sign-in as an app would. */
function pageHtml(config) {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Social sign-in test app</title></head>
<body><h1>Social sign-in test app</h1>
<script src="/scute.js"></script>
<script>
window.__config = ${JSON.stringify(config)};
window.client = new Scute.ScuteClient({ appId: __config.appId, baseUrl: __config.baseUrl });
window.ready = window.client.getAppData().then((r) => (r.error ? { error: String(r.error.message || r.error) } : { data: r.data }));
window.plain = (r) => ({ data: r && r.data ? r.data : null, error: r && r.error ? { name: r.error.name, message: String(r.error.message) } : null });
if (location.pathname === "/callback") {
  const q = new URLSearchParams(location.search);
  window.finished = q.get("sct_error")
    ? Promise.resolve({ sctError: q.get("sct_error") })
    : window.client.verifyMagicLink().then(async (r) => {
        const t = await window.client.getAuthToken();
        const access = t.data && t.data.access;
        let sessions = null;
        if (access) {
          const res = await fetch(__config.baseUrl + "/v1/auth/" + __config.appId + "/sessions", { headers: { "X-Authorization": access } });
          sessions = await res.json();
        }
        return { verify: window.plain(r), access, sessions };
      });
}
</script>
</body></html>`;
}

let gh, browser, servers, origin, app, appSecret, op;

before(async () => {
  const sdkBundle = await bundleSdk();
  gh = await startGatehouse();
  const served = await serveApp({ bundle: sdkBundle, paths: ["/", "/callback"], page: () => pageHtml({ appId: app.id, baseUrl: gh.base }) });
  servers = served.servers;
  origin = served.origin;
  app = await gh.createApp({ name: "Social sign-in test app", origin, callback_url: `${origin}/callback`, public_signup: true });
  appSecret = await gh.appSecret(app.id);
  gh.book.add("oauth_client_secret", OP_SECRET);

  // The provider, with Gatehouse's callback as its client's redirect URI.
  const child = spawn(testopBin(), ["-secret", OP_SECRET, "-redirect", `${gh.base}/v1/auth/${app.id}/oauth/callback`],
    { stdio: ["ignore", "pipe", "inherit"] });
  const issuer = await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`testop exited (${code}) before it listened`)));
    readline.createInterface({ input: child.stdout }).once("line", (l) => resolve(l.replace(/^issuer=/, "")));
  });
  op = { child, issuer };

  const res = await fetch(`${gh.base}/v1/apps/${app.id}/oauth_providers/corp`, {
    method: "PUT",
    headers: { Authorization: `Bearer ${appSecret}`, "Content-Type": "application/json" },
    body: JSON.stringify({ type: "oidc", issuer, client_id: "gatehouse", client_secret: OP_SECRET, name: "Corp SSO" }),
  });
  const body = await res.json();
  assert.equal(res.status, 201, `PUT provider: ${JSON.stringify(body)}`);
  assert.equal(body.oauth_provider.redirect_uri, `${gh.base}/v1/auth/${app.id}/oauth/callback`);
  assert.ok(!JSON.stringify(body).includes(OP_SECRET), "the answer holds the client secret");

  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  op?.child.kill("SIGKILL");
  for (const s of servers ?? []) s.close();
  if (gh) {
    await gh.stop();
    gh.cleanup();
  }
});

/** signInAs opens the app, clicks through signInWithOAuthProvider and the provider's login as username, and returns the callback page's result. */
async function signInAs(username, { provider = "corp" } = {}) {
  const ctx = await browser.newContext();
  try {
    const page = await ctx.newPage();
    await page.goto(`${origin}/`);
    const ready = await page.evaluate(() => window.ready);
    assert.equal(ready.error, undefined, `getAppData failed: ${ready.error}`);
    await Promise.all([page.waitForURL((u) => u.href.startsWith(op.issuer)), page.evaluate((p) => window.client.signInWithOAuthProvider(p), provider)]);
    // The provider's own login page.
    await page.fill("#username", username);
    await page.fill("#password", "pw");
    await Promise.all([page.waitForURL((u) => u.href.startsWith(`${origin}/callback`)), page.click("button[type=submit]")]);
    const url = new URL(page.url());
    const result = await page.evaluate(() => window.finished);
    return { url, result };
  } finally {
    await ctx.close();
  }
}

test("getAppData lists the provider for the prebuilt UI's buttons", async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${origin}/`);
  const { data } = await page.evaluate(() => window.ready);
  await ctx.close();
  assert.deepEqual(data.oauth_providers.map((p) => [p.provider, p.name, p.icon]), [["corp", "Corp SSO", "/v1/assets/oauth/oidc.svg"]]);
  const icon = await fetch(gh.base + data.oauth_providers[0].icon);
  assert.equal(icon.status, 200);
  assert.equal(icon.headers.get("content-type"), "image/svg+xml");
});

test("signInWithOAuthProvider: the provider's login page and back, signed in with a session of type oauth", async () => {
  const { url, result } = await signInAs("ada");
  assert.equal(url.searchParams.get("sct_sk"), "true");
  assert.ok(url.searchParams.get("sct_magic"), `came back to ${url}`);
  assert.equal(url.searchParams.get("sct_oauth"), url.searchParams.get("sct_magic"));
  assert.equal(result.verify.error, null, `verifyMagicLink: ${JSON.stringify(result.verify.error)}`);
  assert.ok(result.access, "the SDK holds an access token");
  const claims = decodeJwt(result.access);
  assert.deepEqual(claims.amr, ["oauth:corp"]);
  assert.equal(result.sessions.sessions.length, 1);
  assert.equal(result.sessions.sessions[0].type, "oauth");
  // The same account signs in to the same user.
  const again = await signInAs("ada");
  assert.equal(decodeJwt(again.result.access).uuid, claims.uuid);
});

test("the hosted login page's button for the provider: the provider's login and back to the app's callback, signed in", async () => {
  const ctx = await browser.newContext();
  try {
    const page = await ctx.newPage();
    await page.goto(`${gh.base}/login/${app.id}?callback_url=${encodeURIComponent(`${origin}/callback`)}`);
    const button = page.getByRole("link", { name: /Corp SSO/ });
    await Promise.all([page.waitForURL((u) => u.href.startsWith(op.issuer)), button.click()]);
    await page.fill("#username", "ada");
    await page.fill("#password", "pw");
    await Promise.all([page.waitForURL((u) => u.href.startsWith(`${origin}/callback`)), page.click("button[type=submit]")]);
    const url = new URL(page.url());
    assert.ok(url.searchParams.get("sct_magic"), `came back to ${url}`);
    const result = await page.evaluate(() => window.finished);
    assert.equal(result.verify.error, null, `verifyMagicLink: ${JSON.stringify(result.verify.error)}`);
    assert.deepEqual(decodeJwt(result.access).amr, ["oauth:corp"]);
  } finally {
    await ctx.close();
  }
});

test("an unverified address is refused back to the app", async () => {
  const { url, result } = await signInAs("eve");
  assert.equal(url.searchParams.get("sct_error"), "email_not_verified");
  assert.equal(url.searchParams.get("sct_magic"), null);
  assert.equal(result.sctError, "email_not_verified");
});

test("a callback_url outside the app's origins gets a page, never a redirect", async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const res = await page.goto(`${gh.base}/v1/auth/${app.id}/oauth/authorize?provider=corp&callback_url=${encodeURIComponent("https://evil.example/")}`);
  assert.equal(res.status(), 400);
  assert.equal(new URL(page.url()).host, new URL(gh.base).host);
  await ctx.close();
});

test("the provider's client secret is in no log line", () => {
  const log = gh.logText();
  assert.ok(log.includes("social sign-in refused"), "the refusal was logged");
  assert.ok(!log.includes(OP_SECRET), "the client secret is in the server's log");
});
