// The magic-link consent page (security.md R-ML-2, R-ML-4) in a real browser:
// headless Chromium, driven by playwright-core, against the real binary.
// An attacker asks for a link to the victim's address from another machine
// and polls; the victim opens the genuine e-mail, sees who asked, is asked
// which number that device shows (three choices), and denies; the attacker
// gets nothing. Picking a wrong number denies too. A genuine cross-device
// sign-in is approved by picking the right number, with JavaScript off; a
// link opened by the browser that asked for it goes straight on to the app
// (one click).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";


import { startGatehouse, gatehouseBin, magicTokenFromLink, chromiumPath, launchChromium } from "./harness.mjs";

gatehouseBin();
chromiumPath(); // fail at once, with how to get it, when Chromium is missing

const ATTACKER_UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0 Safari/537.36";
// The device the e-mail is opened on: not the one that asked.
const PHONE_UA = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1";
const QUESTION = "Which number does that device show?";
const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

let gh, browser, shots;

before(async () => {
  gh = await startGatehouse();
  shots = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-consent-"));
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  if (gh) {
    await gh.stop();
    gh.cleanup();
  }
});

/** ask requests a link as the attacker's machine would (another user agent) and returns the poll handle and number. */
async function ask(identifier, ua = ATTACKER_UA) {
  const res = await fetch(`${gh.base}/v1/auth/${gh.appId}/magic_links/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "User-Agent": ua },
    body: JSON.stringify({ identifier }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  const m = await gh.lastMessage(identifier, { where: (m) => Boolean(m.link) });
  return { handle: body.magic_link.id, number: body.magic_link.match_number, link: m.link };
}

async function poll(handle, ua = ATTACKER_UA) {
  const res = await fetch(`${gh.base}/v1/auth/${gh.appId}/magic_links/status`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "User-Agent": ua },
    body: JSON.stringify({ id: handle }),
  });
  return { status: res.status, body: await res.json() };
}

/** otherDevice opens a browser context as the victim's phone would, JavaScript off. */
async function otherDevice() {
  return browser.newContext({ javaScriptEnabled: false, userAgent: PHONE_UA });
}

/**
 * choices reads the numbers the page offers, in order, through the accessible
 * tree (a group named by its legend, radios named by their labels), and checks
 * there are three, distinct, none selected, with number among them once.
 */
async function choices(page, number) {
  const group = page.getByRole("group", { name: QUESTION });
  const radios = group.getByRole("radio");
  assert.equal(await radios.count(), 3, "three choices");
  const offered = [];
  for (let i = 0; i < 3; i++) {
    const r = radios.nth(i);
    assert.equal(await r.isChecked(), false, "no choice is pre-selected");
    offered.push(Number(await r.getAttribute("value")));
    // The label names the radio: picking by its accessible name works.
    assert.equal(await group.getByRole("radio", { name: String(offered[i]), exact: true }).count(), 1);
  }
  assert.equal(new Set(offered).size, 3, `distinct: ${offered}`);
  assert.ok(offered.every((n) => n >= 10 && n <= 99), `two-digit: ${offered}`);
  assert.equal(offered.filter((n) => n === number).length, 1, `${offered} hold ${number} once`);
  return offered;
}

/** pick chooses a number with the keyboard-reachable radio of that name and presses Approve. */
async function pickAndApprove(page, n) {
  await page.getByRole("group", { name: QUESTION }).getByRole("radio", { name: String(n), exact: true }).check();
  await page.getByRole("button", { name: "Approve: sign in that device" }).click();
}

test("cross-device: the victim denies; the attacker's poll never gets a session", async () => {
  const victim = `victim-${tag}@example.com`;
  const { handle, number, link } = await ask(victim);
  assert.ok(number >= 10 && number <= 99, `match_number ${number}`);
  assert.ok(link.startsWith(`${gh.base}/v1/auth/${gh.appId}/magic_links/open?sct_magic=`), link);

  const ctx = await otherDevice();
  const page = await ctx.newPage();
  const res = await page.goto(link);
  assert.equal(res.status(), 200);
  await page.getByRole("heading", { name: "Was this you?" }).waitFor();
  const offered = await choices(page, number);
  const text = await page.textContent("main");
  assert.match(text, /Chrome on Windows/);
  assert.match(text, /Demo/, "styled with the app's name");
  assert.doesNotMatch(text, new RegExp(victim.replace(/[.@+-]/g, "\\$&")), "the full address is not shown");
  await page.screenshot({ path: path.join(shots, "consent.png"), fullPage: true });
  await page.reload();
  assert.deepEqual(await choices(page, number), offered, "a reload offers the same choices in the same order");
  assert.equal((await poll(handle)).status, 409, "opening the page changes nothing");

  await page.getByRole("button", { name: "Deny: this was not me" }).click();
  await page.getByRole("heading", { name: "Request denied" }).waitFor();
  await sleep(2_100); // the poll interval
  const after = await poll(handle);
  assert.equal(after.status, 404);
  assert.equal(after.body.error_code, "magic_link_denied");
  assert.equal(after.body.access, undefined);
  await ctx.close();
});

test("cross-device: picking a wrong number denies; the poller gets no session", async () => {
  const user = `wrong-${tag}@example.com`;
  const { handle, number, link } = await ask(user);
  const ctx = await otherDevice();
  const page = await ctx.newPage();
  await page.goto(link);
  const offered = await choices(page, number);
  await pickAndApprove(page, offered.find((n) => n !== number));
  await page.getByRole("heading", { name: "Request denied" }).waitFor();
  assert.match(await page.textContent("main"), /not the number/);
  await page.screenshot({ path: path.join(shots, "wrong-number.png"), fullPage: true });
  const after = await poll(handle);
  assert.equal(after.status, 404, JSON.stringify(after.body));
  assert.equal(after.body.error_code, "magic_link_denied");
  assert.equal(after.body.access, undefined);
  // The link had its one guess: it is spent.
  const again = await page.goto(link);
  assert.equal(again.status(), 404);
  await ctx.close();
});

test("cross-device: Approve with the right number, JavaScript off, releases a session to the poller once", async () => {
  const user = `approve-${tag}@example.com`;
  const { handle, number, link } = await ask(user);
  const ctx = await otherDevice();
  const page = await ctx.newPage();
  await page.goto(link);
  await choices(page, number);
  // Approve without a pick: the browser asks for one (the radios are required) and nothing is sent.
  await page.getByRole("button", { name: "Approve: sign in that device" }).click();
  await page.getByRole("heading", { name: "Was this you?" }).waitFor();
  assert.equal((await poll(handle)).status, 409, "nothing was answered");
  await sleep(2_100);
  await pickAndApprove(page, number);
  await page.getByRole("heading", { name: "Approved" }).waitFor();
  const got = await poll(handle);
  assert.equal(got.status, 200, JSON.stringify(got.body));
  assert.ok(got.body.access && got.body.refresh, "the asking device gets its token set");
  await sleep(2_100);
  assert.equal((await poll(handle)).status, 404, "once");
  // The link is spent: opening it again shows the expired page.
  const again = await page.goto(link);
  assert.equal(again.status(), 404);
  await page.getByRole("heading", { name: /expired/ }).waitFor();
  await ctx.close();
});

test("same device: the browser that asked goes straight on to the app (one click) and both tabs sign in", async () => {
  // The app: a real page on its own origin, registered as a new app whose
  // login page it is.
  const appServer = http.createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end("<!doctype html><title>Consent test app</title><h1>Consent test app</h1>");
  });
  await new Promise((resolve) => appServer.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${appServer.address().port}`;
  try {
    const created = await fetch(`${gh.base}/v1/workspaces/${gh.workspaceId}/apps`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${await gh.workspaceSecret()}` },
      body: JSON.stringify({ name: "Consent test app", origin, login_url: `${origin}/login` }),
    });
    const body = await created.json();
    assert.equal(created.status, 200, JSON.stringify(body));
    const app = body.app?.id ?? body.id;
    assert.ok(app, `created app id in ${JSON.stringify(body)}`);

    const user = `same-${tag}@example.com`;
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${origin}/login`);
    const call = (pg, method, route, payload) =>
      pg.evaluate(async ({ url, method, payload }) => {
        const r = await fetch(url, { method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload) });
        return { status: r.status, body: await r.json() };
      }, { url: `${gh.base}/v1/auth/${app}${route}`, method, payload });
    const asked = await call(page, "POST", "/magic_links/login", { identifier: user });
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    const m = await gh.lastMessage(user, { where: (m) => Boolean(m.link) });
    const token = magicTokenFromLink(m.link);

    const tab = await ctx.newPage();
    await tab.goto(m.link); // the one click: the link itself
    assert.equal(new URL(tab.url()).origin, origin, `landed on ${tab.url()}`);
    assert.equal(new URL(tab.url()).pathname, "/login");
    assert.equal(new URL(tab.url()).searchParams.get("sct_magic"), token);
    await tab.getByRole("heading", { name: "Consent test app" }).waitFor();
    // The app exchanges the token, as the client SDK does (PATCH /magic_links/authenticate).
    const exchanged = await call(tab, "PATCH", "/magic_links/authenticate", { token });
    assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
    const collected = await call(page, "POST", "/magic_links/status", { id: asked.body.magic_link.id });
    assert.equal(collected.status, 200, JSON.stringify(collected.body));
    assert.ok(collected.body.access);
    assert.notEqual(collected.body.access, exchanged.body.access, "two tabs, two sessions");
    await ctx.close();
  } finally {
    appServer.close();
  }
});
