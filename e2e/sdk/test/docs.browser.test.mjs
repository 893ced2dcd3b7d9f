// The API reference page (/v1/docs/) in a real browser: headless Chromium,
// driven by playwright-core, against the real binary. The page renders the
// served OpenAPI document client-side under a strict CSP, so what matters is
// what a reader sees: the overview first, whole paths in the sidebar, Markdown
// rendered (no raw backticks), deep links that land on their operation once
// the asynchronous render is done, a search that filters, and GET / leading
// to the page.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { startGatehouse, gatehouseBin, chromiumPath, launchChromium } from "./harness.mjs";

gatehouseBin();
chromiumPath(); // fail at once, with how to get it, when Chromium is missing

const VIEWPORT = { width: 1280, height: 900 };

let gh, browser;

before(async () => {
  gh = await startGatehouse();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  if (gh) {
    await gh.stop();
    gh.cleanup();
  }
});

/** openDocs opens the docs page (at hash) and waits until the script has rendered the document. */
async function openDocs(hash = "", { spec } = {}) {
  const ctx = await browser.newContext({ viewport: VIEWPORT });
  if (spec) await ctx.route("**/v1/openapi.json", (route) => route.fulfill({ json: spec }));
  const page = await ctx.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`); // CSP violations land here too
  });
  const res = await page.goto(`${gh.base}/v1/docs/${hash}`);
  assert.equal(res.status(), 200);
  await page.waitForSelector('body[data-rendered="true"]', { timeout: 15_000 });
  return { ctx, page, problems };
}

/** placement reports where an element is against the viewport, and how far the window is scrolled. */
async function placement(page, selector) {
  const box = await page.locator(selector).boundingBox();
  assert.ok(box, `${selector} is not rendered`);
  const scrollY = await page.evaluate(() => window.scrollY);
  return { box, scrollY };
}

/** assertInView checks that the top of the element is on screen, below the sticky header. */
function assertInView({ box, scrollY }, what) {
  assert.ok(scrollY > 0, `${what}: the window is not scrolled (scrollY ${scrollY})`);
  assert.ok(box.y >= 0 && box.y < VIEWPORT.height / 3, `${what}: top at y=${box.y}; want it near the top of the viewport`);
  assert.ok(box.y + Math.min(box.height, 100) <= VIEWPORT.height, `${what}: not within the viewport (${JSON.stringify(box)})`);
}

test("a deep link #op-verifyOtp scrolls to that operation once the page is rendered", async () => {
  const { ctx, page, problems } = await openDocs("#op-verifyOtp");
  const at = await placement(page, "#op-verifyOtp");
  assertInView(at, "#op-verifyOtp");
  const card = page.locator("#op-verifyOtp");
  assert.equal(await card.getAttribute("data-operation-id"), "verifyOtp");
  assert.match(await card.locator(".path").textContent(), /^\/v1\/auth\/\{app_id\}\/otps\/verify$/);
  // Its sidebar entry is marked as the current one.
  const current = await page.locator("#nav a[aria-current]").textContent();
  assert.match(current, /\/otps\/verify/);
  assert.deepEqual(problems, []);
  await ctx.close();
});

test("the overview comes first, and the sidebar shows whole, distinct paths", async () => {
  const { ctx, page, problems } = await openDocs();
  const first = await page.evaluate(() => document.getElementById("content").firstElementChild.id);
  assert.equal(first, "overview");
  const headings = await page.locator("#overview h3").allTextContents();
  for (const h of ["Credentials", "Errors", "Pagination", "Rate limits"]) {
    assert.ok(headings.includes(h), `overview headings ${JSON.stringify(headings)} lack ${h}`);
  }
  const overview = await page.locator("#overview").textContent();
  for (const s of ["Authorization: Bearer", "X-Authorization", "error_code", "user_meta_errors", "Retry-After", "429"]) {
    assert.ok(overview.includes(s), `the overview does not mention ${s}`);
  }

  const entries = await page.locator("#nav .nav-path").evaluateAll((els) =>
    els.map((e) => {
      const r = e.getBoundingClientRect();
      const nav = document.getElementById("nav").getBoundingClientRect();
      return {
        text: e.textContent,
        clipped: e.scrollWidth > e.clientWidth + 1 || r.right > nav.right + 1,
        overflow: getComputedStyle(e).textOverflow,
      };
    }),
  );
  const tokens = entries.filter((e) => e.text.startsWith("/v1/auth/{app_id}/tokens/"));
  const want = [
    "/v1/auth/{app_id}/tokens/force_refresh",
    "/v1/auth/{app_id}/tokens/refresh",
    "/v1/auth/{app_id}/tokens/rotate_access",
    "/v1/auth/{app_id}/tokens/verify/refresh",
  ];
  assert.deepEqual(tokens.map((e) => e.text).sort(), want);
  for (const e of entries) {
    assert.ok(!e.text.includes("…"), `sidebar path ${e.text} is cut short`);
    assert.ok(!e.clipped, `sidebar path ${e.text} is clipped`);
    assert.notEqual(e.overflow, "ellipsis", `sidebar path ${e.text} may end in an ellipsis`);
  }
  assert.deepEqual(problems, []);
  await ctx.close();
});

test("descriptions are rendered Markdown: no raw backticks or bold markers", async () => {
  const { ctx, page, problems } = await openDocs();
  const found = await page.evaluate(() => {
    const raw = [];
    let codes = 0;
    for (const md of document.querySelectorAll(".md")) {
      codes += md.querySelectorAll("code").length;
      const walker = document.createTreeWalker(md, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.parentElement.closest("code, pre")) continue;
        // A backtick, or **bold** left as text ("****" alone is a secret's hint, not Markdown).
        if (n.data.includes("`") || /\*\*[^\s*][^*]*[^\s*]\*\*/.test(n.data)) raw.push(n.data.slice(0, 120));
      }
    }
    return { raw, codes, blocks: document.querySelectorAll(".md").length };
  });
  assert.ok(found.blocks > 10, `only ${found.blocks} rendered descriptions`);
  assert.ok(found.codes > 10, `only ${found.codes} inline code spans: the Markdown is not rendered`);
  assert.deepEqual(found.raw, [], "text with raw Markdown");
  // A nested list of a description is a real nested list.
  assert.ok((await page.locator("#op-listMessageServiceProviders .md ul ul li").count()) > 0);
  assert.deepEqual(problems, []);
  await ctx.close();
});

test("the search filters operations by path, operationId and description", async () => {
  const { ctx, page, problems } = await openDocs();
  const visible = () =>
    page.locator("#content section.op").evaluateAll((els) =>
      els.filter((e) => e.offsetParent !== null).map((e) => e.getAttribute("data-operation-id")),
    );
  const all = await visible();
  assert.ok(all.length > 50, `${all.length} operations shown`);

  // The path's words match its operation, and the few whose descriptions name the path.
  await page.fill("#filter", "otps/verify");
  const byPathWords = await visible();
  assert.ok(byPathWords.includes("verifyOtp") && byPathWords.length <= 3, JSON.stringify(byPathWords));
  assert.equal(await page.locator("#overview").isVisible(), false, "the overview stays in the way of the results");
  const navShown = await page.locator("#nav .nav-path").evaluateAll((els) => els.filter((e) => e.offsetParent !== null).map((e) => e.textContent));
  assert.ok(navShown.includes("/v1/auth/{app_id}/otps/verify") && navShown.length === byPathWords.length, JSON.stringify(navShown));

  await page.fill("#filter", "refreshTokens");
  assert.ok((await visible()).includes("refreshTokens"));
  assert.ok(!(await visible()).includes("verifyOtp"));

  await page.fill("#filter", "masked recipient"); // words of listMessageServiceProviders' description
  const byDescription = await visible();
  assert.ok(byDescription.includes("listMessageServiceProviders"), JSON.stringify(byDescription));
  assert.ok(byDescription.length < all.length / 4, `${byDescription.length} shown`);

  // Terms combine: the method narrows a path down.
  await page.fill("#filter", "current_user");
  const byPath = await visible();
  await page.fill("#filter", "delete current_user");
  const byMethod = await visible();
  assert.ok(byMethod.includes("signOut"), JSON.stringify(byMethod));
  assert.ok(byPath.includes("currentUser") && byMethod.length < byPath.length, `${JSON.stringify(byMethod)} of ${JSON.stringify(byPath)}`);

  await page.fill("#filter", "no-such-operation-anywhere");
  assert.deepEqual(await visible(), []);
  assert.equal(await page.locator(".no-match").isVisible(), true);

  await page.fill("#filter", "");
  assert.equal((await visible()).length, all.length);
  assert.deepEqual(problems, []);
  await ctx.close();
});

test("clicking a sidebar entry updates the hash; a new hash scrolls to its operation", async () => {
  const { ctx, page, problems } = await openDocs();
  await page.locator('#nav a[href="#op-refreshTokens"]').click();
  await page.waitForFunction(() => location.hash === "#op-refreshTokens");
  assertInView(await placement(page, "#op-refreshTokens"), "#op-refreshTokens after a click");

  await page.evaluate(() => { location.hash = "#op-sendOtp"; });
  await page.waitForFunction(() => {
    const r = document.getElementById("op-sendOtp").getBoundingClientRect();
    return r.top >= 0 && r.top < innerHeight / 3;
  });
  assertInView(await placement(page, "#op-sendOtp"), "#op-sendOtp after a hash change");

  // A deep link to an operation the search hides clears the search.
  await page.fill("#filter", "webhooks");
  await page.evaluate(() => { location.hash = "#op-verifyOtp"; });
  await page.waitForFunction(() => document.getElementById("op-verifyOtp").offsetParent !== null);
  assertInView(await placement(page, "#op-verifyOtp"), "#op-verifyOtp hidden by a search");
  assert.deepEqual(problems, []);
  await ctx.close();
});

// A document of our own, served to the page in place of the server's: the
// page renders what OpenAPI allows (error_code enums through allOf, named and
// plain examples, response headers, required headers, the Markdown subset)
// whether or not the server's document uses it yet, and never turns text into
// markup or a javascript: link.
const crafted = {
  openapi: "3.1.0",
  info: {
    title: "Crafted",
    version: "1",
    description: [
      "Intro with `code`, **bold**, *em* and [a link](#op-makeThing); GATEHOUSE_* and a*b stay as they are.",
      "",
      "## Part",
      "",
      "- one",
      "  - nested `x`",
      "- two",
      "",
      "| a | b |",
      "|---|---|",
      "| `c` | d |",
      "",
      "```json",
      '{"raw": true}',
      "```",
      "",
      '<img src=x onerror="window.__pwned=1"> [bad](javascript:window.__pwned=2) <script>window.__pwned=3</script>',
    ].join("\n"),
  },
  components: {
    securitySchemes: { key: { type: "apiKey", in: "header", name: "X-Key", description: "A key of **yours**." } },
    schemas: {
      Error: { type: "object", required: ["error"], properties: { error: { type: "string" }, error_code: { type: "string" } } },
    },
  },
  paths: {
    "/things/{id}": {
      post: {
        operationId: "makeThing",
        summary: "Make a thing",
        tags: ["Things"],
        description: "Makes **one** thing.",
        security: [{ key: [] }],
        parameters: [
          { name: "id", in: "path", required: true, schema: { type: "string" } },
          { name: "X-Refresh-Token", in: "header", required: true, description: "The `refresh` token.", schema: { type: "string" } },
        ],
        requestBody: {
          required: true,
          content: { "application/json": { schema: { type: "object", properties: { name: { type: "string" } } }, example: { name: "kettle" } } },
        },
        responses: {
          200: { description: "Made.", content: { "application/json": { schema: { type: "object" }, examples: { ok: { summary: "A kettle", value: { id: "t1" } } } } } },
          429: {
            description: "Too many.",
            headers: { "Retry-After": { description: "Seconds to wait.", schema: { type: "integer" } } },
            content: {
              "application/json": {
                schema: { allOf: [{ $ref: "#/components/schemas/Error" }, { properties: { error_code: { enum: ["rate_limited", "slow_down"] } } }] },
                example: { error: "Too many requests", error_code: "rate_limited" },
              },
            },
          },
        },
      },
    },
  },
};

test("the page renders errors, examples, headers and Markdown from the OpenAPI structure, safely", async () => {
  const { ctx, page, problems } = await openDocs("#op-makeThing", { spec: crafted });
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator("#content img, #content script").count(), 0);
  assert.equal(await page.locator('#content a[href^="javascript"]').count(), 0);

  const ov = page.locator("#overview");
  assert.equal(await ov.locator("strong").first().textContent(), "bold");
  assert.equal(await ov.locator("em").first().textContent(), "em");
  assert.equal(await ov.locator('a[href="#op-makeThing"]').textContent(), "a link");
  assert.match(await ov.locator("p").first().textContent(), /GATEHOUSE_\* and a\*b stay/);
  assert.equal((await ov.locator("ul ul li").textContent()).trim(), "nested x");
  assert.equal(await ov.locator("table td code").textContent(), "c");
  assert.equal(await ov.locator("pre code").textContent(), '{"raw": true}');
  assert.match(await ov.textContent(), /<img src=x onerror=/, "HTML in a description is shown as text");

  const card = page.locator("#op-makeThing");
  const header = card.locator("table.params tr", { hasText: "X-Refresh-Token" });
  assert.equal(await header.locator(".req").textContent(), "required");
  assert.equal(await header.locator("td").nth(1).textContent(), "header");
  assert.match(await card.locator(".security").textContent(), /X-Key/);
  assert.match(await card.locator(".example").first().textContent(), /kettle/);
  const ok = card.locator(".response", { has: page.locator(".status-code", { hasText: "200" }) });
  assert.match(await ok.locator(".example").textContent(), /A kettle[\s\S]*"t1"/);
  const tooMany = card.locator(".response", { has: page.locator(".status-code", { hasText: "429" }) });
  assert.deepEqual(await tooMany.locator(".error-codes code").allTextContents(), ["rate_limited", "slow_down"]);
  assert.match(await tooMany.locator("table.headers").textContent(), /Retry-After[\s\S]*Seconds to wait/);
  assert.match(await tooMany.locator(".example").textContent(), /"error_code": "rate_limited"/);
  assert.deepEqual(problems, []);
  await ctx.close();
});

test("GET / ends on the docs page", async () => {
  const res = await fetch(`${gh.base}/`, { redirect: "manual" });
  await res.arrayBuffer();
  assert.ok(res.status === 302 || res.status === 303, `GET / = ${res.status}`);
  assert.equal(res.headers.get("location"), "/v1/docs/");

  const ctx = await browser.newContext({ viewport: VIEWPORT });
  const page = await ctx.newPage();
  await page.goto(`${gh.base}/`);
  assert.equal(page.url(), `${gh.base}/v1/docs/`);
  await page.waitForSelector('body[data-rendered="true"]', { timeout: 15_000 });
  assert.equal(await page.locator("#overview h2").first().textContent(), "Gatehouse API");
  await ctx.close();

  // Any other unknown path is still the API's JSON 404.
  const nf = await fetch(`${gh.base}/no-such-page`);
  assert.equal(nf.status, 404);
  assert.equal((await nf.json()).error_code, "not_found");
});
