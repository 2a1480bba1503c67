import { describe, expect, it } from "vitest";

import { loadSettings, modeContext, MODES, saveSettings, SETTINGS_KEY, type Mode } from "./modes";

// `docs/gateway-contract.md` §4.3 and DeerFlow's client (reasoning effort).
const TABLE: Record<Mode, [thinking: boolean, plan: boolean, subagents: boolean, effort: string | undefined]> = {
  flash: [false, false, false, undefined],
  thinking: [true, false, false, "low"],
  pro: [true, true, false, "medium"],
  ultra: [true, true, true, "high"],
};

class MemoryStorage {
  readonly items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
}

describe("modeContext", () => {
  it.each(MODES)("%s sets the contract's flags", (mode) => {
    const [thinking, plan, subagents, effort] = TABLE[mode];
    const expected: Record<string, unknown> = {
      mode,
      thinking_enabled: thinking,
      is_plan_mode: plan,
      subagent_enabled: subagents,
    };
    if (effort !== undefined) expected.reasoning_effort = effort;
    expect(modeContext(mode)).toStrictEqual(expected);
  });

  it("leaves reasoning_effort out of flash entirely (not undefined-valued)", () => {
    expect(Object.keys(modeContext("flash"))).not.toContain("reasoning_effort");
  });
});

describe("settings", () => {
  it("round-trips through storage", () => {
    const storage = new MemoryStorage();
    saveSettings(storage, { mode: "ultra", modelName: "scenario-model" });
    expect(loadSettings(storage)).toStrictEqual({ mode: "ultra", modelName: "scenario-model" });
  });

  it.each([
    ["nothing stored", null, { mode: "flash", modelName: null }],
    ["not JSON", "{", { mode: "flash", modelName: null }],
    ["an unknown mode", '{"mode":"turbo","modelName":"m"}', { mode: "flash", modelName: "m" }],
    ["a non-string model", '{"mode":"pro","modelName":7}', { mode: "pro", modelName: null }],
    ["an array", "[1]", { mode: "flash", modelName: null }],
  ])("falls back field by field on %s", (_case, stored, expected) => {
    const storage = new MemoryStorage();
    if (stored !== null) storage.setItem(SETTINGS_KEY, stored);
    expect(loadSettings(storage)).toStrictEqual(expected);
  });
});
