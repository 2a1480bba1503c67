/**
 * Which gateways the running test used, and where their replay logs stood when it first looked
 * one up: the no-miss check then reads exactly what this test caused, even with several workers
 * (each worker is its own process, and runs its tests one at a time).
 */

import type { Gateway } from "./env";
import { replayLogOffset } from "./replay-log";

/** A gateway the running test uses, with its replay log's size before the test used it. */
export interface Watched {
  gateway: Gateway;
  path: string;
  offset: number;
}

const watched = new Map<string, Watched>();

/** Notes that the running test uses `gateway`. */
export function watchGateway(gateway: Gateway): void {
  if (gateway.replayLog !== null && !watched.has(gateway.name)) {
    watched.set(gateway.name, { gateway, path: gateway.replayLog, offset: replayLogOffset(gateway.replayLog) });
  }
}

/** The gateways noted since the last call, forgetting them. */
export function takeWatched(): Watched[] {
  const list = [...watched.values()];
  watched.clear();
  return list;
}
