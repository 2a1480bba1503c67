import { describe, expect, it } from "vitest";

import { CSRF_HEADER, readCookie, withCsrf } from "./csrf";

const TOKEN = "k3y_-abcDEF0123456789";

describe("withCsrf", () => {
  it.each([
    { method: "POST", cookies: `csrf_token=${TOKEN}`, header: TOKEN },
    { method: "put", cookies: `a=1; csrf_token=${TOKEN}; b=2`, header: TOKEN },
    { method: "PATCH", cookies: ` csrf_token = ${TOKEN} `, header: TOKEN },
    { method: "DELETE", cookies: `csrf_token=${encodeURIComponent("a/b=c")}`, header: "a/b=c" },
    { method: "GET", cookies: `csrf_token=${TOKEN}`, header: null },
    { method: undefined, cookies: `csrf_token=${TOKEN}`, header: null },
    { method: "POST", cookies: "", header: null },
    { method: "POST", cookies: `xcsrf_token=${TOKEN}; csrf_token_old=x`, header: null },
  ])("$method with cookies '$cookies' sends header $header", ({ method, cookies, header }) => {
    const init = withCsrf({ method, headers: { "Content-Type": "application/json" } }, cookies);
    const headers = new Headers(init.headers);
    expect(headers.get(CSRF_HEADER)).toBe(header);
    expect(headers.get("Content-Type")).toBe("application/json");
  });

  it("keeps the request otherwise as it was", () => {
    const init: RequestInit = { method: "POST", body: "{}", credentials: "same-origin" };
    const sent = withCsrf(init, `csrf_token=${TOKEN}`);
    expect(sent.body).toBe("{}");
    expect(sent.credentials).toBe("same-origin");
    expect(new Headers(init.headers).has(CSRF_HEADER)).toBe(false);
  });
});

describe("readCookie", () => {
  it("ignores parts without a value separator", () => {
    expect(readCookie("flag; csrf_token=v", "csrf_token")).toBe("v");
    expect(readCookie("flag", "flag")).toBeNull();
  });
});
