// Harness for the @scute/core end-to-end suite: starts a Gatehouse binary in
// development mode on a fresh data directory, and offers the small helpers the
// tests need (dev outbox, per-client storage, polling, JWT decoding, a fetch
// spy and a record of every secret the suite saw, for the log scan).
//
// It builds nothing: the binary comes from GATEHOUSE_BIN.

import { spawn, execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

import * as esbuild from "esbuild";

const START_TIMEOUT_MS = 30_000;
const SUITE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SDK_VERSION = "1.2.2";
const STOP_GRACE_MS = 5_000;

/**
 * Returns the environment for the server and the CLI: this process's
 * environment, with GATEHOUSE_E2E_DATABASE_URL (when set) mapped to
 * GATEHOUSE_DATABASE_URL so that the same suite runs on PostgreSQL. The caller
 * provides a fresh database; the URL is used as given.
 */
export function childEnv() {
  const env = { ...process.env };
  if (process.env.GATEHOUSE_E2E_DATABASE_URL) {
    env.GATEHOUSE_DATABASE_URL = process.env.GATEHOUSE_E2E_DATABASE_URL;
  }
  return env;
}

/** chromiumPath returns Debian's Chromium (or CHROMIUM_PATH), or throws saying how to get it. */
export function chromiumPath() {
  const p = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
  if (!fs.existsSync(p)) {
    throw new Error(`Chromium is not at ${p}: install it (apt-get install chromium) or set CHROMIUM_PATH`);
  }
  return p;
}

/**
 * launchChromium starts headless Chromium through playwright-core (never a
 * downloaded browser), with background networking off: this machine refuses
 * Chromium's own connections.
 */
export async function launchChromium() {
  const { chromium } = await import("playwright-core");
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
}

/** Returns the server binary named by GATEHOUSE_BIN, or throws a clear error. */
export function gatehouseBin() {
  const bin = process.env.GATEHOUSE_BIN;
  if (!bin) {
    throw new Error(
      "GATEHOUSE_BIN is not set. Build the server and point the suite at it, from the repository root:\n" +
        "  go build -o /tmp/gatehouse ./cmd/gatehouse && cd e2e/sdk && npm ci && GATEHOUSE_BIN=/tmp/gatehouse npm test",
    );
  }
  if (!fs.existsSync(bin)) {
    throw new Error(`GATEHOUSE_BIN=${bin} does not exist`);
  }
  return bin;
}

// ---------------------------------------------------------------------------
// Secrets seen by the suite (for the log scan) and the fetch spy.

/**
 * SecretBook remembers every code, token, magic token and API secret the suite
 * saw, so that the final test can check none of them reached the server log.
 */
export class SecretBook {
  constructor() {
    /** @type {Map<string, string>} value -> kind */
    this.values = new Map();
    /** @type {Promise<void>[]} */
    this.pending = [];
  }

  /** add records value as a secret of the given kind (short or empty values are ignored). */
  add(kind, value) {
    if (typeof value !== "string" || value.length < 4) return;
    if (!this.values.has(value)) this.values.set(value, kind);
  }

  /**
   * collect walks a JSON body and records the fields that carry secrets:
   * tokens, API secrets and keys, one-time codes and magic links.
   */
  collect(body) {
    const walk = (v, depth) => {
      if (depth > 8 || v === null || typeof v !== "object") return;
      if (Array.isArray(v)) {
        for (const x of v) walk(x, depth + 1);
        return;
      }
      for (const [k, x] of Object.entries(v)) {
        if (typeof x === "string") {
          if (["access", "refresh", "csrf", "api_secret", "token"].includes(k)) this.add(k, x);
          if (k === "code" && /^[0-9]{4,12}$/.test(x)) this.add("otp", x);
          if (k === "link" && x) {
            const t = magicTokenFromLink(x);
            if (t) this.add("magic", t);
          }
        } else {
          walk(x, depth + 1);
        }
      }
    };
    walk(body, 0);
  }

  /** settle waits until every response body the fetch spy is still reading has been collected. */
  async settle() {
    while (this.pending.length) {
      const batch = this.pending.splice(0);
      await Promise.allSettled(batch);
    }
  }
}

/**
 * installFetchSpy wraps globalThis.fetch (which wretch, and so the SDK, uses at
 * call time) so that every request is recorded and every JSON response body is
 * searched for secrets. It returns the request log: [{method, url, status}].
 */
export function installFetchSpy(book) {
  const original = globalThis.fetch;
  const calls = [];
  globalThis.fetch = async (input, init = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const method = (init.method || (typeof input === "object" && input.method) || "GET").toUpperCase();
    const entry = { method, url, status: undefined };
    calls.push(entry);
    const res = await original(input, init);
    entry.status = res.status;
    if ((res.headers.get("content-type") || "").includes("json")) {
      book.pending.push(
        res
          .clone()
          .json()
          .then((b) => book.collect(b), () => {}),
      );
    }
    return res;
  };
  return calls;
}

// ---------------------------------------------------------------------------
// Small helpers.

/** createStorage returns a Map-backed async sessionStorageAdapter; each ScuteClient needs its own. */
export function createStorage() {
  const map = new Map();
  return {
    map,
    async getItem(key) {
      return map.has(key) ? map.get(key) : null;
    },
    async setItem(key, value) {
      map.set(key, value);
    },
    async removeItem(key) {
      map.delete(key);
    },
  };
}

/**
 * recordUnhandledRejections records unhandled promise rejections. The SDK never
 * awaits DELETE requests, so a non-2xx DELETE surfaces only here (node:test
 * also fails the test that was running).
 */
export function recordUnhandledRejections() {
  const seen = [];
  process.on("unhandledRejection", (reason) => {
    seen.push(reason);
  });
  return seen;
}

/**
 * waitFor polls fn until it returns a truthy value (which it returns) or the
 * timeout passes (then it throws, with the last value or error in the message).
 */
export async function waitFor(fn, { timeout = 5_000, interval = 50, what = "condition" } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) {
      const detail = last instanceof Error ? `${last.name}: ${last.message}` : JSON.stringify(last);
      throw new Error(`waitFor: ${what} not met within ${timeout} ms (last: ${detail})`);
    }
    await sleep(interval);
  }
}

/** base64urlDecode decodes base64url (padding optional) into a UTF-8 string. */
export function base64urlDecode(s) {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/");
  const padded = b64 + "=".repeat((4 - (b64.length % 4)) % 4);
  return Buffer.from(padded, "base64").toString("utf8");
}

/** isBase64url reports whether s is non-empty unpadded base64url. */
export function isBase64url(s) {
  return typeof s === "string" && s.length > 0 && /^[A-Za-z0-9_-]+$/.test(s);
}

/** decodeJwt returns the payload of a JWT (no signature check), or throws. */
export function decodeJwt(token) {
  if (typeof token !== "string") throw new Error(`not a JWT: ${typeof token}`);
  const parts = token.split(".");
  if (parts.length !== 3) throw new Error(`not a JWT: ${parts.length} segments`);
  return JSON.parse(base64urlDecode(parts[1]));
}

/** magicTokenFromLink returns the sct_magic parameter of a link, or null. */
export function magicTokenFromLink(link) {
  try {
    return new URL(link).searchParams.get("sct_magic");
  } catch {
    return null;
  }
}

/** describeError renders an SDK error for assertion messages. */
export function describeError(e) {
  if (!e) return String(e);
  const parts = [e.name || "Error"];
  if (e.code !== undefined) parts.push(`code=${e.code}`);
  if (e.json !== undefined) parts.push(`json=${JSON.stringify(e.json)}`);
  if (e.message) parts.push(`message=${JSON.stringify(e.message)}`);
  return parts.join(" ");
}

// ---------------------------------------------------------------------------
// The server.

/**
 * startGatehouse runs `GATEHOUSE_BIN serve --dev --data-dir <fresh tmp dir>
 * --addr 127.0.0.1:0`, waits for bootstrap.json and /readyz, and returns a
 * handle. The server's stderr (JSON log lines) goes to a file for the log scan.
 */
export async function startGatehouse({ book } = {}) {
  const bin = gatehouseBin();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-"));
  const dataDir = path.join(root, "data");
  fs.mkdirSync(dataDir, { mode: 0o700 });
  const logPath = path.join(root, "server.log");
  const stdoutPath = path.join(root, "stdout.log");
  const errFd = fs.openSync(logPath, "w");
  const outFd = fs.openSync(stdoutPath, "w");
  const env = childEnv();

  const child = spawn(bin, ["serve", "--dev", "--data-dir", dataDir, "--addr", "127.0.0.1:0"], {
    env,
    stdio: ["ignore", outFd, errFd],
  });
  fs.closeSync(errFd);
  fs.closeSync(outFd);
  let exited = null;
  const exitPromise = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      exited = { code, signal };
      resolve(exited);
    });
  });
  // If this test process dies first, do not leave the server behind.
  const killOnExit = () => {
    if (!exited) child.kill("SIGKILL");
  };
  process.on("exit", killOnExit);

  const gh = new Gatehouse({ bin, root, dataDir, logPath, env, child, exitPromise, book, killOnExit });
  gh.exited = () => exited;
  try {
    await gh.waitReady();
  } catch (e) {
    await gh.stop();
    throw e;
  }
  return gh;
}

/** Gatehouse is a running server started by startGatehouse. */
export class Gatehouse {
  constructor({ bin, root, dataDir, logPath, env, child, exitPromise, book, killOnExit }) {
    Object.assign(this, { bin, root, dataDir, logPath, env, child, exitPromise, killOnExit });
    this.book = book ?? new SecretBook();
    this.stopped = false;
    this._workspaceSecret = null;
  }

  async waitReady() {
    const deadline = Date.now() + START_TIMEOUT_MS;
    const bootstrapPath = path.join(this.dataDir, "bootstrap.json");
    let boot = null;
    while (!boot) {
      if (this.exited()) {
        throw new Error(`gatehouse exited before it was ready (${JSON.stringify(this.exited())}); log:\n${this.logTail()}`);
      }
      if (Date.now() > deadline) throw new Error(`gatehouse wrote no ${bootstrapPath} within ${START_TIMEOUT_MS} ms; log:\n${this.logTail()}`);
      try {
        boot = JSON.parse(fs.readFileSync(bootstrapPath, "utf8"));
      } catch {
        await sleep(50);
      }
    }
    for (const k of ["workspace_id", "app_id", "api_secret", "base_url"]) {
      if (!boot[k]) throw new Error(`bootstrap.json lacks ${k}`);
    }
    this.workspaceId = boot.workspace_id;
    this.appId = boot.app_id;
    this.apiSecret = boot.api_secret;
    this.base = boot.base_url.replace(/\/+$/, "");
    this.book.add("api_secret", this.apiSecret);
    for (;;) {
      if (this.exited()) throw new Error(`gatehouse exited before /readyz answered; log:\n${this.logTail()}`);
      try {
        const res = await fetch(`${this.base}/readyz`);
        await res.arrayBuffer();
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`GET /readyz did not answer 200 within ${START_TIMEOUT_MS} ms`);
      await sleep(50);
    }
  }

  /** logText returns the server's captured stderr. */
  logText() {
    try {
      return fs.readFileSync(this.logPath, "utf8");
    } catch {
      return "";
    }
  }

  logTail(n = 20) {
    return this.logText().split("\n").slice(-n).join("\n");
  }

  /** stop sends SIGTERM, then SIGKILL after 5 s; it is safe to call twice. */
  async stop() {
    if (!this.stopped) {
      this.stopped = true;
      if (!this.exited()) {
        this.child.kill("SIGTERM");
        const timer = setTimeout(() => {
          if (!this.exited()) this.child.kill("SIGKILL");
        }, STOP_GRACE_MS);
        await this.exitPromise;
        clearTimeout(timer);
      }
      process.off("exit", this.killOnExit);
    }
    return this.exited();
  }

  /** cleanup removes the temporary directory unless GATEHOUSE_E2E_KEEP is set. */
  cleanup() {
    if (process.env.GATEHOUSE_E2E_KEEP) {
      console.error(`gatehouse e2e: kept ${this.root} (server.log has the server's log)`);
      return;
    }
    fs.rmSync(this.root, { recursive: true, force: true });
  }

  // --- dev outbox -----------------------------------------------------------

  /** outbox returns the messages sent to an address or phone number, newest first. */
  async outbox(to) {
    const res = await fetch(`${this.base}/dev/outbox?to=${encodeURIComponent(to)}`);
    const body = await res.json();
    if (res.status !== 200) throw new Error(`GET /dev/outbox = ${res.status} ${JSON.stringify(body)}`);
    for (const m of body.messages) {
      if (m.code) this.book.add("otp", m.code);
      const t = m.link ? magicTokenFromLink(m.link) : null;
      if (t) this.book.add("magic", t);
    }
    return body.messages;
  }

  /** outboxMark returns the ids of the messages to an address so far, for `after`. */
  async outboxMark(to) {
    return new Set((await this.outbox(to)).map((m) => m.id));
  }

  /**
   * lastMessage waits for the newest message to `to` that matches `where` and
   * is not in `after` (a set of ids from outboxMark).
   */
  async lastMessage(to, { after = new Set(), where = () => true, timeout = 5_000 } = {}) {
    return waitFor(
      async () => (await this.outbox(to)).find((m) => !after.has(m.id) && where(m)),
      { timeout, what: `a new message to ${to}` },
    );
  }

  /** lastCode returns the one-time code of the newest matching message to `to`. */
  async lastCode(to, opts = {}) {
    const m = await this.lastMessage(to, { ...opts, where: (m) => Boolean(m.code) });
    return m.code;
  }

  /** lastMagicToken returns the sct_magic token of the newest matching message to `to`. */
  async lastMagicToken(to, opts = {}) {
    const m = await this.lastMessage(to, { ...opts, where: (m) => Boolean(m.link && magicTokenFromLink(m.link)) });
    return magicTokenFromLink(m.link);
  }

  // --- management calls the SDK does not have --------------------------------

  /** cli runs the binary with the server's settings (--dev and its data directory) and parses its JSON output. */
  async cli(...args) {
    const out = await new Promise((resolve, reject) => {
      execFile(this.bin, [...args, "--dev", "--data-dir", this.dataDir], { env: this.env }, (err, stdout, stderr) => {
        if (err) reject(new Error(`gatehouse ${args[0]} ${args[1] ?? ""} failed: ${err.message}\n${stderr}`));
        else resolve(stdout);
      });
    });
    return JSON.parse(out);
  }

  /** workspaceSecret issues (once) a workspace API secret for the bootstrap workspace. */
  async workspaceSecret() {
    if (!this._workspaceSecret) {
      const out = await this.cli("secrets", "create", "--workspace", this.workspaceId, "--name", "e2e");
      if (!out.api_secret) throw new Error(`secrets create printed no api_secret (keys: ${Object.keys(out)})`);
      this._workspaceSecret = out.api_secret;
      this.book.add("api_secret", out.api_secret);
    }
    return this._workspaceSecret;
  }

  /** appSecret issues an app API secret for appId. */
  async appSecret(appId) {
    const out = await this.cli("secrets", "create", "--app", appId, "--name", "e2e");
    if (!out.api_secret) throw new Error(`secrets create printed no api_secret (keys: ${Object.keys(out)})`);
    this.book.add("api_secret", out.api_secret);
    return out.api_secret;
  }

  /** manage calls the management API with the workspace secret and returns {status, body}. */
  async manage(method, pathname, body) {
    const secret = await this.workspaceSecret();
    const res = await fetch(`${this.base}${pathname}`, {
      method,
      headers: { Authorization: `Bearer ${secret}`, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, body: json };
  }

  /** createApp creates an app in the bootstrap workspace and returns it. */
  async createApp(settings) {
    const { status, body } = await this.manage("POST", `/v1/workspaces/${this.workspaceId}/apps`, settings);
    if (status !== 200 && status !== 201) throw new Error(`create app = ${status} ${JSON.stringify(body)}`);
    return body.app ?? body;
  }

  /** patchApp changes an app's settings, e.g. {email_auth_type: "otp"}, and returns it. */
  async patchApp(appId, settings) {
    const { status, body } = await this.manage("PATCH", `/v1/workspaces/${this.workspaceId}/apps/${appId}`, settings);
    if (status !== 200) throw new Error(`update app = ${status} ${JSON.stringify(body)}`);
    return body.app ?? body;
  }
}

/**
 * bundleSdk bundles the installed, unmodified @scute/core (its "import" entry,
 * dist/index.mjs, with its dependencies) into one browser script that puts
 * the module's exports on window.Scute (and ScuteClient etc. on window).
 */
export async function bundleSdk() {
  const pkg = JSON.parse(fs.readFileSync(path.join(SUITE_DIR, "node_modules/@scute/core/package.json"), "utf8"));
  assert.equal(pkg.version, SDK_VERSION, "the installed @scute/core is not the pinned version (run npm ci)");
  const result = await esbuild.build({
    stdin: {
      contents: 'import * as Scute from "@scute/core";\nwindow.Scute = Scute;\nObject.assign(window, Scute);\n',
      resolveDir: SUITE_DIR,
      sourcefile: "scute-entry.mjs",
      loader: "js",
    },
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "es2020",
    write: false,
    logLevel: "silent",
    metafile: true,
  });
  const inputs = Object.keys(result.metafile.inputs);
  assert.ok(inputs.includes("node_modules/@scute/core/dist/index.mjs"), `the bundle's inputs: ${inputs.join(", ")}`);
  return result.outputFiles[0].text;
}

/**
 * serveApp serves a test app on http://localhost:<port> (a secure context):
 * the SDK bundle at /scute.js and, at each of paths, the HTML page() returns
 * (called per request, so it may read state set after the server starts).
 * Chromium may try either loopback address for "localhost", so the same port
 * answers on both when there is an IPv6 loopback.
 */
export async function serveApp({ bundle, paths, page }) {
  const handler = (req, res) => {
    const url = new URL(req.url, "http://localhost");
    if (url.pathname === "/scute.js") {
      res.writeHead(200, { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "no-store" });
      res.end(bundle);
    } else if (paths.includes(url.pathname)) {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
      res.end(page());
    } else {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("not found");
    }
  };
  const v4 = http.createServer(handler);
  await new Promise((resolve, reject) => v4.once("error", reject).listen(0, "127.0.0.1", resolve));
  const port = v4.address().port;
  const servers = [v4];
  const v6 = http.createServer(handler);
  await new Promise((resolve) => {
    v6.once("error", () => resolve()); // no IPv6 loopback here: 127.0.0.1 alone will do
    v6.listen(port, "::1", () => {
      servers.push(v6);
      resolve();
    });
  });
  return { origin: `http://localhost:${port}`, servers };
}
