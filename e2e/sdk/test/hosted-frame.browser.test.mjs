// The hosted sign-in page inside the app's own page (docs/hosted-pages.md,
// "Framing"), in headless Chromium against the real binary: the app on
// http://localhost:<port> frames Gatehouse's /login/{app_id} from
// http://127.0.0.1:<port>, another site, so the frame is a third-party
// context where SameSite=Lax cookies are never sent. A code sign-in through
// the framed forms lands, inside the frame, on the app's callback with a
// token that C5 accepts; the same browser at the top level has no session
// from it (the frame's cookies are partitioned by the app's site); a frame
// of Gatehouse's own site shares the top level's cookies; and a
// site that is not one of the app's origins cannot frame the page at all.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { startGatehouse, gatehouseBin, chromiumPath, launchChromium, serveApp } from "./harness.mjs";

gatehouseBin();
chromiumPath(); // fail at once, with how to get it, when Chromium is missing

let gh, browser, appServers, otherServers, origin, other, app, sameSiteApp;

function framePage(src) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Framing test app</title></head>
<body><h1>Framing test app</h1>
<iframe id="signin" title="Sign in" src="${src}" width="480" height="620"></iframe>
</body></html>`;
}

before(async () => {
  gh = await startGatehouse();
  assert.notEqual(new URL(gh.base).hostname, "localhost", "Gatehouse must be on another site than the app");
  let src = "", sameSrc = "";
  const served = await serveApp({ paths: ["/", "/callback"], page: () => framePage(src) });
  appServers = served.servers;
  origin = served.origin;
  const stranger = await serveApp({ paths: ["/"], page: () => framePage(src) });
  otherServers = stranger.servers;
  other = stranger.origin.replace("localhost", "127.0.0.1"); // another origin: not one of the app's
  app = await gh.createApp({ name: "Framing test app", origin, callback_url: `${origin}/callback`, email_auth_type: "otp", allowed_identifiers: ["email"] });
  src = `${gh.base}/login/${app.id}?callback_url=${encodeURIComponent(`${origin}/callback`)}`;
  // An app on Gatehouse's own site (127.0.0.1, another port), framing it too.
  const sameSite = await serveApp({ paths: ["/", "/callback"], page: () => framePage(sameSrc) });
  otherServers.push(...sameSite.servers);
  const sameOrigin = sameSite.origin.replace("localhost", "127.0.0.1");
  sameSiteApp = { origin: sameOrigin };
  const created = await gh.createApp({ name: "Same-site app", origin: sameOrigin, callback_url: `${sameOrigin}/callback`, email_auth_type: "otp", allowed_identifiers: ["email"] });
  sameSiteApp.id = created.id;
  sameSrc = `${gh.base}/login/${created.id}?callback_url=${encodeURIComponent(`${sameOrigin}/callback`)}`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  for (const s of [...(appServers ?? []), ...(otherServers ?? [])]) s.close();
  if (gh) {
    await gh.stop();
    gh.cleanup();
  }
});

test("a code sign-in inside the app's frame lands on the app's callback, in the frame, with a token C5 accepts", async () => {
  const email = "framed@example.com";
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${origin}/`);
  const frame = page.frameLocator("#signin");
  await frame.getByLabel(/e-mail/i).waitFor();
  const mark = await gh.outboxMark(email);
  await frame.getByLabel(/e-mail/i).fill(email);
  await frame.getByRole("button", { name: /code/i }).click();
  await frame.getByLabel("Code").waitFor({ timeout: 10_000 });
  await frame.getByLabel("Code").fill(await gh.lastCode(email, { after: mark }));
  await frame.getByRole("button", { name: "Sign in" }).click();
  const inner = page.frames().find((f) => f.parentFrame() === page.mainFrame());
  await inner.waitForURL((u) => u.href.startsWith(`${origin}/callback`), { timeout: 10_000 });
  const token = new URL(inner.url()).searchParams.get("sct_magic");
  assert.ok(token, `no sct_magic in ${inner.url()}`);
  const res = await fetch(`${gh.base}/v1/auth/${app.id}/magic_links/authenticate`, {
    method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }),
  });
  assert.equal(res.status, 200, await res.text());

  // The frame's cookies are the app's site's: at the top level this browser
  // has no hosted session.
  const top = await ctx.newPage();
  await top.goto(`${gh.base}/account/${app.id}`);
  assert.ok(new URL(top.url()).pathname.startsWith(`/login/${app.id}`), `top level: ${top.url()}`);
  await ctx.close();
});

test("a site that is not one of the app's origins cannot frame the page", async () => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const blocked = new Promise((resolve) => page.on("console", (m) => { if (/frame-ancestors|Refused to frame/i.test(m.text())) resolve(true); }));
  await page.goto(`${other}/`);
  const result = await Promise.race([blocked, new Promise((r) => setTimeout(() => r(false), 5_000))]);
  assert.equal(result, true, "the browser refused to frame the page");
  await ctx.close();
});

test("a frame of Gatehouse's own site shares the top level's cookies: a sign-in started at the top level does not disturb the frame's", async () => {
  const email = "samesite@example.com";
  const ctx = await browser.newContext();
  // At the top level: a pending sign-in (a code asked for, not entered).
  const top = await ctx.newPage();
  await top.goto(`${gh.base}/login/${sameSiteApp.id}`);
  await top.getByLabel(/e-mail/i).fill("someone-else@example.com");
  await top.getByRole("button", { name: /code/i }).click();
  await top.getByLabel("Code").waitFor();
  // In the app's frame: a whole sign-in.
  const page = await ctx.newPage();
  await page.goto(`${sameSiteApp.origin}/`);
  const frame = page.frameLocator("#signin");
  const mark = await gh.outboxMark(email);
  await frame.getByLabel(/e-mail/i).fill(email);
  await frame.getByRole("button", { name: /code/i }).click();
  await frame.getByLabel("Code").waitFor({ timeout: 10_000 });
  await frame.getByLabel("Code").fill(await gh.lastCode(email, { after: mark }));
  await frame.getByRole("button", { name: "Sign in" }).click();
  const inner = page.frames().find((f) => f.parentFrame() === page.mainFrame());
  await inner.waitForURL((u) => u.href.startsWith(`${sameSiteApp.origin}/callback`), { timeout: 10_000 });
  assert.ok(new URL(inner.url()).searchParams.get("sct_magic"), `no sct_magic in ${inner.url()}`);
  // The same cookies: the top level is signed in as the frame's user now.
  await top.goto(`${gh.base}/account/${sameSiteApp.id}`);
  assert.equal(new URL(top.url()).pathname, `/account/${sameSiteApp.id}`);
  assert.match(await top.locator("main").innerText(), new RegExp(email.replace(".", "\\.")));
  await ctx.close();
});
