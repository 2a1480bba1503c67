/**
 * The gateway's double-submit CSRF protection, client side: registration and sign-in set a
 * `csrf_token` cookie that page scripts can read, and every mutating request must echo it in the
 * `X-CSRF-Token` header. Everything that sends a request (the LangGraph SDK client and the REST
 * helpers) goes through `withCsrf`, so no mutating request can forget it.
 */

/** The cookie the gateway sets on register, sign-in and initialize. */
export const CSRF_COOKIE = "csrf_token";
/** The header the gateway compares with the cookie. */
export const CSRF_HEADER = "X-CSRF-Token";

const MUTATING_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** Whether the gateway checks CSRF for a request with this method (GET when absent). */
export function isMutating(method: string | undefined): boolean {
  return MUTATING_METHODS.has((method ?? "GET").toUpperCase());
}

/** The value of cookie `name` in a `document.cookie` string, or `null`. */
export function readCookie(cookies: string, name: string): string | null {
  for (const part of cookies.split(";")) {
    const separator = part.indexOf("=");
    if (separator < 0) continue;
    if (part.slice(0, separator).trim() === name) {
      return decodeURIComponent(part.slice(separator + 1).trim());
    }
  }
  return null;
}

/**
 * `init` with `X-CSRF-Token` set from the `csrf_token` cookie when the method mutates and the
 * cookie exists. Without the cookie (signed out, or auth disabled) the header is left out: the
 * gateway then answers with its own "CSRF token missing" error, which names the problem.
 */
export function withCsrf(init: RequestInit, cookies: string): RequestInit {
  if (!isMutating(init.method)) return init;
  const token = readCookie(cookies, CSRF_COOKIE);
  if (token === null) return init;
  const headers = new Headers(init.headers);
  headers.set(CSRF_HEADER, token);
  return { ...init, headers };
}
