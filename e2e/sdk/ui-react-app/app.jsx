// The test app of ui-react.browser.test.mjs: Scute's prebuilt UI, the
// unmodified npm @scute/ui-react 1.2.2 (<Auth /> and <Profile />) on
// @scute/core 1.2.2 and React 18, as an app's sign-in page would use it.
// The test bundles this file with esbuild at test time; nothing of the UI
// or the SDK is patched. window.__config gives the app id and Gatehouse's
// address; window.__events records the SDK's auth events, and
// window.client is the ScuteClient, for the test's own checks.

import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { ScuteClient } from "@scute/core";
import { Auth, Profile } from "@scute/ui-react";

const config = window.__config;
const client = new ScuteClient({ appId: config.appId, baseUrl: config.baseUrl });
window.client = client;

function App() {
  const [status, setStatus] = useState("loading");
  const [signIns, setSignIns] = useState(0);
  useEffect(
    () =>
      client.onAuthStateChange((event, session) => {
        window.__events.push(event);
        setStatus(session?.status ?? "unauthenticated");
      }),
    [],
  );
  if (status === "loading") return <p data-testid="app-state">loading</p>;
  return (
    <>
      <p data-testid="app-state">{status}</p>
      {status === "authenticated" ? (
        <Profile scuteClient={client} />
      ) : (
        <Auth
          scuteClient={client}
          onSignIn={() => setSignIns((n) => n + 1)}
          policyURLs={{ privacyPolicy: "/privacy", termsOfService: "/terms" }}
        />
      )}
      <p data-testid="sign-ins" hidden>{signIns}</p>
    </>
  );
}

createRoot(document.getElementById("root")).render(<App />);
