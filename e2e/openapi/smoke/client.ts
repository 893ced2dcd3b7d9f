// Compiles against the types openapi-typescript generates from the served
// document (run.sh writes them to smoke/gatehouse.d.ts): a typed client
// for a code sign-in, a refresh and a user read. If an operation, a body or
// an answer changes shape, this stops compiling.
import type { paths, components } from "./gatehouse";

type Op<P extends keyof paths, M extends keyof paths[P]> = paths[P][M];
type JSONBody<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;
type OK<O> = O extends { responses: { 200: { content: { "application/json": infer R } } } } ? R : never;

type SendCode = Op<"/v1/auth/{app_id}/otps/login", "post">;
type VerifyCode = Op<"/v1/auth/{app_id}/otps/verify", "post">;
type Refresh = Op<"/v1/auth/{app_id}/tokens/refresh", "post">;
type CurrentUser = Op<"/v1/auth/{app_id}/current_user", "get">;
type AppRead = Op<"/v1/apps/{app_id}", "get">;

export class Gatehouse {
  constructor(private base: string, private appId: string) {}

  private async call<R>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<R> {
    const res = await fetch(this.base + path, {
      method,
      headers: { "Content-Type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) {
      const err = (await res.json()) as components["schemas"]["ErrorBody"];
      throw new Error(`${res.status} ${err.error_code ?? ""}`);
    }
    return (await res.json()) as R;
  }

  app(): Promise<OK<AppRead>> {
    return this.call("GET", `/v1/apps/${this.appId}`);
  }

  sendCode(body: JSONBody<SendCode>): Promise<OK<SendCode>> {
    return this.call("POST", `/v1/auth/${this.appId}/otps/login`, body);
  }

  verifyCode(body: JSONBody<VerifyCode>): Promise<OK<VerifyCode>> {
    return this.call("POST", `/v1/auth/${this.appId}/otps/verify`, body);
  }

  refresh(refreshToken: string): Promise<OK<Refresh>> {
    return this.call("POST", `/v1/auth/${this.appId}/tokens/refresh`, undefined, { "X-Refresh-Token": refreshToken });
  }

  currentUser(access: string): Promise<OK<CurrentUser>> {
    return this.call("GET", `/v1/auth/${this.appId}/current_user`, undefined, { "X-Authorization": access });
  }
}

export async function signIn(g: Gatehouse, email: string, readCode: () => Promise<string>): Promise<string> {
  const sent = await g.sendCode({ identifier: email });
  const tokens = await g.verifyCode({ otp: await readCode(), user_id: sent.user_id });
  if (!tokens.refresh) throw new Error("a second factor is required"); // absent until the MFA step
  const fresh = await g.refresh(tokens.refresh);
  if (!fresh.access) throw new Error("no access token");
  const me = await g.currentUser(fresh.access);
  return me.user.id;
}
