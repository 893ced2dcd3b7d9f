// Gatehouse hosted account page: passkeys (WebAuthn), the one part that
// needs JavaScript. Loaded with the page's CSP nonce; no inline code. The
// server put the ceremony's options on the form (data-options); the script
// asks the browser, puts its answer in the form's credential field and
// submits the form, which carries the page's CSRF token. No fetch. Its
// status lines come translated in the form's data-unsupported,
// data-cancelled and data-exists.
(function () {
  "use strict";

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
