// The quickstart page: sign in with an e-mail code through the unmodified @scute/core SDK
// (window.Scute, from /scute.js), then ask our own backend who we are.

const $ = (id) => document.getElementById(id);
let scute, config, email;

function show(id) {
  for (const s of ["send-form", "verify-form", "signed-in"]) $(s).hidden = s !== id;
  $("error").textContent = "";
}

function fail(error) {
  $("error").textContent = error?.message || String(error);
}

// Signed in: show the user from the SDK's session, then call GET /api/me with the access token.
async function showUser() {
  const { data, error } = await scute.getSession();
  if (error || !data.user) return show("send-form");
  $("user-email").textContent = data.user.email;
  $("user-id").textContent = data.user.id;
  $("avatar").textContent = (data.user.email || "?").charAt(0).toUpperCase();
  show("signed-in");

  const { data: token } = await scute.getAuthToken();
  const res = await fetch("/api/me", { headers: { Authorization: "Bearer " + token.access } });
  $("backend").textContent = res.status + " " + JSON.stringify(await res.json().catch(() => null), null, 2);
}

$("send-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  email = $("email").value.trim();
  // sendLoginOtp sends a code whatever the app's email_auth_type, and signs a new address up.
  const { error } = await scute.sendLoginOtp(email);
  if (error) return fail(error);
  $("sent-to").textContent = email;
  $("outbox").href = config.gatehouse_url + "/dev/outbox?to=" + encodeURIComponent(email);
  show("verify-form");
  $("code").focus();
});

$("verify-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const { data, error } = await scute.verifyOtp($("code").value.trim(), email);
  if (error) return fail(error);
  // verifyOtp checks the code; signInWithTokenPayload stores the session in the browser.
  const signedIn = await scute.signInWithTokenPayload(data.authPayload);
  if (signedIn.error) return fail(signedIn.error);
  await showUser();
});

$("sign-out").addEventListener("click", async () => {
  await scute.signOut();
  show("send-form");
});

(async () => {
  config = await (await fetch("/config.json")).json();
  scute = new Scute.ScuteClient({ appId: config.app_id, baseUrl: config.gatehouse_url });
  await showUser();
})().catch(fail);
