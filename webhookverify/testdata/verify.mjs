// verify.mjs: check a Gatehouse webhook delivery. Node 18+, no dependencies.
// Library: import { verify } from "./verify.mjs"; verify(header, rawBody, secrets) throws on failure.
// CLI: echo '{"header":"t=...,v1=...","body":"<raw body>"}' | node verify.mjs whsec_a,whsec_b
import { createHmac, timingSafeEqual } from "node:crypto";
import { pathToFileURL } from "node:url";

// verify throws an Error unless header (X-Webhook-Signature) signs rawBody (the exact bytes
// received, a Buffer or string) with one of secrets, at most toleranceSec seconds from now.
export function verify(header, rawBody, secrets, toleranceSec = 300) {
  if (typeof header !== "string" || header.trim() === "") {
    throw new Error("missing signature header");
  }
  let t = null;
  const sigs = [];
  for (let part of header.split(",")) {
    part = part.trim();
    if (part === "") continue;
    const eq = part.indexOf("=");
    if (eq < 0) throw new Error("malformed signature header: part without '='");
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key === "t") {
      if (t !== null) throw new Error("malformed signature header: more than one t");
      if (!/^[0-9]+$/.test(value)) throw new Error("malformed signature header: t is not a decimal number");
      if (value.length > 18) throw new Error("malformed signature header: t out of range");
      t = value;
    } else if (key === "v1") {
      // Buffer.from(..., "hex") silently stops at bad input, so check the shape first.
      if (!/^(?:[0-9a-fA-F]{2})+$/.test(value)) throw new Error("malformed signature header: v1 is not hex");
      sigs.push(Buffer.from(value, "hex"));
    } // other keys (v0, v2, ...) are ignored
  }
  if (t === null) throw new Error("malformed signature header: no t");
  if (sigs.length === 0) throw new Error("malformed signature header: no v1");

  const body = Buffer.isBuffer(rawBody) ? rawBody : Buffer.from(rawBody, "utf8");
  const signed = Buffer.concat([Buffer.from(t + ".", "utf8"), body]);
  const list = typeof secrets === "string" ? [secrets] : secrets;
  const matched = list.filter((s) => s).some((secret) => {
    // The key is the secret string as given (whsec_...), not decoded.
    const want = createHmac("sha256", secret).update(signed).digest();
    return sigs.some((got) => got.length === want.length && timingSafeEqual(got, want));
  });
  if (!matched) throw new Error("no matching signature");

  const now = Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(t)) > toleranceSec) throw new Error("timestamp outside tolerance");
}

async function main() {
  const secrets = (process.argv[2] || "").split(",").filter((s) => s);
  try {
    const chunks = [];
    for await (const chunk of process.stdin) chunks.push(chunk);
    const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (typeof input.body !== "string") throw new Error("input body is not a string");
    verify(input.header, input.body, secrets);
  } catch (err) {
    console.log(`fail: ${err.message}`);
    process.exit(1);
  }
  console.log("ok");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
