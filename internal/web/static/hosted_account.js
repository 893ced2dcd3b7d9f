// Gatehouse hosted account pages: passkeys (WebAuthn), the one part that
// needs JavaScript, and on the account page a line that says when a new
// push request waits for approval. Loaded with the page's CSP nonce; no
// inline code. The server put the ceremony's options on the form
// (data-options); the script asks the browser, puts its answer in the
// form's credential field and submits the form, which carries the page's
// CSRF token. Its status lines come translated in the form's
// data-unsupported, data-cancelled and data-exists.
(function () {
  "use strict";

  // New push requests (hosted_push.go): while the page is visible, ask
  // every 5 seconds how many requests wait (a read: POST with the page's
  // CSRF token, JSON {"pending": N}). When a new one has come (more than
  // before) or the number differs from the page's list (data-pending), the
  // status line says so with a link that loads the page again (#requests).
  // The page never reloads by itself: the person may be typing in one of
  // its forms, or reading the answer to one. Polling stops at an answer
  // that is not OK (signed out, a CSRF token no longer valid), and pauses
  // after 4 minutes without a key, click, touch or scroll on the page
  // (nobody is looking); any input resumes it. The route reads the session
  // without counting as its use, so an open page never keeps it alive.
  function watchPush() {
    var out = document.getElementById("push-new");
    if (!out || !out.dataset.status || !window.fetch) return;
    var shown = Number(out.dataset.pending) || 0, last = shown, arrived = false, busy = false;
    var seen = Date.now(), idle = 4 * 60 * 1000;
    ["keydown", "pointerdown", "touchstart", "scroll"].forEach(function (t) {
      window.addEventListener(t, function () { seen = Date.now(); }, { passive: true, capture: true });
    });
    function say(n) {
      if (n > last) arrived = true;
      last = n;
      var show = n > 0 && (arrived || n !== shown);
      if (show === (out.childNodes.length > 0)) return;
      if (!show) { out.textContent = ""; return; }
      var a = document.createElement("a");
      a.href = out.dataset.href;
      a.textContent = out.dataset.link;
      a.addEventListener("click", function (e) {
        // Already on the page the link names: a link to its own #requests
        // would only scroll, so load it again (a GET: nothing is resent).
        var to = new URL(a.href, window.location.href);
        if (to.pathname === window.location.pathname && to.search === window.location.search) {
          e.preventDefault();
          window.location.hash = to.hash;
          window.location.reload();
        }
      });
      out.textContent = out.dataset.text + " ";
      out.appendChild(a);
    }
    var timer = setInterval(async function () {
      if (busy || document.hidden || Date.now() - seen > idle) return;
      busy = true;
      try {
        var res = await fetch(out.dataset.status, {
          method: "POST", credentials: "same-origin", body: new URLSearchParams({ csrf: out.dataset.csrf }),
        });
        if (!res.ok) { clearInterval(timer); busy = false; return; }
        var data = await res.json().catch(function () { return {}; });
        if (typeof data.pending === "number") say(data.pending);
      } catch (e) { /* offline for a moment: the next tick tries again */ }
      busy = false;
    }, 5000);
  }
  watchPush();

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
  function options(form) {
    var o = JSON.parse(form.getAttribute("data-options"));
    return o.publicKey || o;
  }
  function common(cred) {
    return {
      id: cred.id, rawId: bufToB64url(cred.rawId), type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
    };
  }

  async function create(form) {
    var pk = options(form);
    pk.challenge = b64urlToBuf(pk.challenge);
    pk.user.id = b64urlToBuf(pk.user.id);
    (pk.excludeCredentials || []).forEach(function (c) { c.id = b64urlToBuf(c.id); });
    var cred = await navigator.credentials.create({ publicKey: pk });
    var r = cred.response, out = common(cred);
    out.response = {
      clientDataJSON: bufToB64url(r.clientDataJSON), attestationObject: bufToB64url(r.attestationObject),
      transports: r.getTransports ? r.getTransports() : [],
    };
    return out;
  }

  async function assert(form) {
    var pk = options(form);
    pk.challenge = b64urlToBuf(pk.challenge);
    (pk.allowCredentials || []).forEach(function (c) { c.id = b64urlToBuf(c.id); });
    var cred = await navigator.credentials.get({ publicKey: pk });
    var r = cred.response, out = common(cred);
    out.response = {
      clientDataJSON: bufToB64url(r.clientDataJSON), authenticatorData: bufToB64url(r.authenticatorData),
      signature: bufToB64url(r.signature), userHandle: r.userHandle ? bufToB64url(r.userHandle) : undefined,
    };
    return out;
  }

  function wire(buttonID, formID, fn) {
    var b = document.getElementById(buttonID), form = document.getElementById(formID);
    if (!b || !form) return;
    var status = document.getElementById(b.getAttribute("aria-controls"));
    if (!window.PublicKeyCredential) {
      if (status) status.textContent = form.dataset.unsupported || "";
      return;
    }
    b.hidden = false;
    b.addEventListener("click", function () {
      b.disabled = true;
      if (status) status.textContent = "";
      fn(form).then(function (answer) {
        form.elements.credential.value = JSON.stringify(answer);
        form.submit();
      }).catch(function (e) {
        b.disabled = false;
        if (status) {
          var name = e && e.name;
          status.textContent = (name === "NotAllowedError" && form.dataset.cancelled) ||
            (name === "InvalidStateError" && form.dataset.exists) || (e && e.message) || String(e);
        }
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    wire("passkey-create", "passkey-create-form", create);
    wire("passkey-assert", "passkey-assert-form", assert);
  });
})();
