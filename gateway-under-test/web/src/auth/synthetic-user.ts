/**
 * The user an auth-disabled gateway answers for a request without a session cookie
 * (`GET /api/v1/auth/me`). The client recognises auth-disabled mode by this user, and the
 * browser suite checks the gateway's answer against this module field by field, so the two
 * cannot drift apart silently.
 */

/** A gateway user, as `GET /api/v1/auth/me` answers (`UserResponse`). */
export interface GatewayUser {
  id: string;
  email: string;
  system_role: "admin" | "user";
  needs_setup: boolean;
  oauth_provider: string | null;
}

/** The synthetic administrator of auth-disabled mode. */
export const SYNTHETIC_USER: Readonly<GatewayUser> = Object.freeze({
  id: "default",
  email: "default@test.local",
  system_role: "admin",
  needs_setup: false,
  oauth_provider: null,
});

/** The `UserResponse` fields, in the gateway's key order. */
export const USER_FIELDS = ["id", "email", "system_role", "needs_setup", "oauth_provider"] as const;

/** Whether `user` is the synthetic user, compared field by field. */
export function isSyntheticUser(user: GatewayUser): boolean {
  return USER_FIELDS.every((field) => user[field] === SYNTHETIC_USER[field]);
}
