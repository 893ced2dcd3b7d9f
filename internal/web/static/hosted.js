// Gatehouse hosted sign-in: passkeys (WebAuthn). Loaded with the page's CSP
// nonce; no inline code, no framework. Each passkey form (data-passkey:
// signin, mfa or add) stays hidden unless this browser can use the app's
// passkeys on this page; the code forms work without any of this. The
// page's language is the server's: its status lines come in the form's
// data-* attributes (data-cancelled, data-exists, data-insecure,
// data-refused, data-wait), translated.
(function () {
  "use strict";
  var canPasskey = !!(window.PublicKeyCredential && navigator.credentials);

  // Waiting pages: a magic link (hosted_magic.go) or a push approval
  // (hosted_push.go). The page asks every 4 seconds whether it is still
  // pending (a read), and submits its own form ("I've opened the link",
  // "I've approved it") once it is not; "gone" goes to data-gone (a GET:
  // the page may be a POST's answer). It stops at a refusal (signed out,
  // an old token) and sends the form once, whoever presses it first.
  document.querySelectorAll("form[data-wait]").forEach(function (form) {
    var out = form.querySelector("[data-wait-status]"), busy = false, sent = false;
    if (out) out.textContent = form.dataset.wait;
    form.addEventListener("submit", function (e) {
      if (sent) { e.preventDefault(); return; }
      sent = true;
      clearInterval(timer);
    });
    var timer = setInterval(async function () {
      if (busy || document.hidden) return;
      busy = true;
      try {
        // The form's own fields (its CSRF token, a step-up's challenge),
        // and the token in X-CSRF-Token for the sign-in page's routes.
        var res = await fetch(form.dataset.status, {
          method: "POST", credentials: "same-origin", body: new URLSearchParams(new FormData(form)),
          headers: { "X-CSRF-Token": form.elements.csrf.value },
        });
        if (!res.ok) { clearInterval(timer); busy = false; return; }
        var data = await res.json().catch(function () { return {}; });
        if (data.state === "done" && !sent) { sent = true; clearInterval(timer); form.submit(); }
        else if (data.state === "gone") { clearInterval(timer); window.location.assign(form.dataset.gone); }
      } catch (e) { /* offline for a moment: the next tick tries again */ }
      busy = false;
    }, 4000);
  });
  // The link's landing page waits for the person to press Continue: a page
  // that signed in by itself could be opened by anyone's link (signing a
  // victim in as someone else) or by a mail scanner. The script only says
  // whether this browser can add a passkey afterwards.
  document.querySelectorAll('form[data-magic="open"]').forEach(function (form) {
    var here = canPasskey && (form.dataset.origins || "").split(" ").indexOf(window.location.origin) >= 0;
    if (here && form.elements.webauthn) form.elements.webauthn.value = "1";
  });

  if (!canPasskey) return;

  function buf(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }
  function b64(b) {
    var bytes = new Uint8Array(b), bin = "";
    for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function ids(list) {
    (list || []).forEach(function (c) { c.id = buf(c.id); });
  }
  function request(o) {
    o = o.publicKey || o;
    o.challenge = buf(o.challenge);
    ids(o.allowCredentials);
    return o;
  }
  function creation(o) {
    o = o.publicKey || o;
    o.challenge = buf(o.challenge);
    o.user.id = buf(o.user.id);
    ids(o.excludeCredentials);
    return o;
  }
  function common(c, response) {
    return JSON.stringify({
      id: c.id, rawId: b64(c.rawId), type: c.type, authenticatorAttachment: c.authenticatorAttachment || undefined,
      clientExtensionResults: c.getClientExtensionResults ? c.getClientExtensionResults() : {}, response: response,
    });
  }
  function assertion(c) {
    var r = c.response;
    return common(c, {
      clientDataJSON: b64(r.clientDataJSON), authenticatorData: b64(r.authenticatorData),
      signature: b64(r.signature), userHandle: r.userHandle ? b64(r.userHandle) : undefined,
    });
  }
  function attestation(c) {
    var r = c.response;
    return common(c, {
      clientDataJSON: b64(r.clientDataJSON), attestationObject: b64(r.attestationObject),
      transports: r.getTransports ? r.getTransports() : [],
    });
  }

  // begin asks the server for a ceremony's options (the login page's CSRF token).
  async function begin(form, body) {
    var res = await fetch(form.dataset.begin, {
      method: "POST", credentials: "same-origin", body: JSON.stringify(body || {}),
      headers: { "Content-Type": "application/json", "X-CSRF-Token": form.elements.csrf.value },
    });
    var data = await res.json().catch(function () { return {}; });
    if (!res.ok) throw new Error(data.error || (form.dataset.refused || "").replace("%s", res.status));
    return data;
  }
  // send posts the browser's answer with the form: the server answers with the next page.
  function send(form, credential, tag) {
    form.elements.credential.value = credential;
    if (tag && form.elements.tag) form.elements.tag.value = tag;
    form.submit();
  }
  // say shows why a ceremony failed in the form's status line; null clears
  // it, and a ceremony the script itself aborted (AbortError) says nothing.
  function say(form, e) {
    var out = form.querySelector('[role="status"]'), d = form.dataset;
    if (!out || (e && e.name === "AbortError")) return;
    out.textContent = !e ? "" : ({ NotAllowedError: d.cancelled, InvalidStateError: d.exists, SecurityError: d.insecure })[e.name] ||
      e.message || String(e);
  }
  function wire(form, run) {
    var button = form.querySelector("button");
    form.hidden = false;
    button.addEventListener("click", function () {
      button.disabled = true;
      say(form, null);
      run().catch(function (e) {
        button.disabled = false;
        say(form, e);
      });
    });
  }

  var modes = {
    signin: function (form) {
      var flag = document.querySelector('input[name="webauthn"]');
      if (flag) flag.value = "1"; // a code sign-in may then offer to add a passkey
      var field = document.getElementById("identifier"), pending = null;
      async function run(conditional) {
        if (pending) pending.abort();
        var abort = (pending = new AbortController());
        var who = !conditional && field && field.value.trim();
        var got = await begin(form, who ? { identifier: who } : {});
        var req = { publicKey: request(got.options), signal: abort.signal };
        if (conditional) req.mediation = "conditional";
        var cred = await navigator.credentials.get(req);
        if (cred) send(form, assertion(cred), got.tag);
      }
      wire(form, function () { return run(false); });
      // The browser's autofill offers the app's passkeys in the identifier field.
      if (PublicKeyCredential.isConditionalMediationAvailable) {
        PublicKeyCredential.isConditionalMediationAvailable().then(function (ok) {
          if (ok) run(true).catch(function () {});
        });
      }
    },
    mfa: function (form) {
      var options = form.dataset.options;
      wire(form, async function () {
        var cred = await navigator.credentials.get({ publicKey: request(JSON.parse(options)) });
        send(form, assertion(cred));
      });
    },
    add: function (form) {
      wire(form, async function () {
        var got = await begin(form, {});
        var cred = await navigator.credentials.create({ publicKey: creation(got.options) });
        send(form, attestation(cred));
      });
    },
  };

  document.querySelectorAll("form[data-passkey]").forEach(function (form) {
    var here = (form.dataset.origins || "").split(" ").indexOf(window.location.origin) >= 0;
    if (here && modes[form.dataset.passkey]) modes[form.dataset.passkey](form);
  });
})();
