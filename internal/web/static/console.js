// Gatehouse console: passkeys (WebAuthn), the one part that needs
// JavaScript. Loaded with the page's CSP nonce; no inline code anywhere.
(function () {
  "use strict";
  if (!window.PublicKeyCredential) return; // the e-mail code still works

  function b64urlToBuf(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }
  function bufToB64url(buf) {
    var bytes = new Uint8Array(buf), bin = "";
    for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function csrf() {
    var el = document.querySelector('input[name="csrf"]');
    return el ? el.value : "";
  }
  async function post(path, body) {
    var headers = { "Content-Type": "application/json" };
    if (csrf()) headers["X-CSRF-Token"] = csrf();
    var res = await fetch(path, { method: "POST", headers: headers, body: JSON.stringify(body || {}), credentials: "same-origin" });
    var data = await res.json().catch(function () { return {}; });
    if (!res.ok) throw new Error(data.error || "The server refused (" + res.status + ").");
    return data;
  }
  function say(el, text) {
    var out = document.getElementById(el.getAttribute("aria-controls"));
    if (out) out.textContent = text;
  }

  async function signIn(button) {
    var opts = await post("/console/signin/passkey/begin");
    var pk = opts.publicKey || opts;
    pk.challenge = b64urlToBuf(pk.challenge);
    (pk.allowCredentials || []).forEach(function (c) { c.id = b64urlToBuf(c.id); });
    var cred = await navigator.credentials.get({ publicKey: pk });
    var r = cred.response;
    var done = await post("/console/signin/passkey/finish", {
      id: cred.id, rawId: bufToB64url(cred.rawId), type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
      response: {
        clientDataJSON: bufToB64url(r.clientDataJSON), authenticatorData: bufToB64url(r.authenticatorData),
        signature: bufToB64url(r.signature), userHandle: r.userHandle ? bufToB64url(r.userHandle) : undefined,
      },
    });
    window.location.assign(done.location);
  }

  async function register(button) {
    var opts = await post("/console/account/passkeys/begin");
    var pk = opts.publicKey || opts;
    pk.challenge = b64urlToBuf(pk.challenge);
    pk.user.id = b64urlToBuf(pk.user.id);
    (pk.excludeCredentials || []).forEach(function (c) { c.id = b64urlToBuf(c.id); });
    var cred = await navigator.credentials.create({ publicKey: pk });
    var r = cred.response;
    var done = await post("/console/account/passkeys/finish", {
      id: cred.id, rawId: bufToB64url(cred.rawId), type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
      response: {
        clientDataJSON: bufToB64url(r.clientDataJSON), attestationObject: bufToB64url(r.attestationObject),
        transports: r.getTransports ? r.getTransports() : [],
      },
    });
    window.location.assign(done.location);
  }

  function wire(id, fn) {
    var b = document.getElementById(id);
    if (!b) return;
    b.hidden = false;
    b.addEventListener("click", function () {
      b.disabled = true;
      say(b, "");
      fn(b).catch(function (e) {
        b.disabled = false;
        say(b, e && e.name === "NotAllowedError" ? "Cancelled, or no passkey for this console on this device." : (e.message || String(e)));
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    wire("passkey-signin", signIn);
    wire("passkey-add", register);
  });
})();
