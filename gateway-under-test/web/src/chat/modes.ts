/**
 * The four chat modes and the run-context flags each one sets, the way DeerFlow's web client
 * maps them, plus the settings the picker keeps in `localStorage`.
 */

/** The modes, fastest first. */
export const MODES = ["flash", "thinking", "pro", "ultra"] as const;

/** A chat mode. */
export type Mode = (typeof MODES)[number];

/** The reasoning effort a mode asks for. */
export type ReasoningEffort = "low" | "medium" | "high";

/** The context keys a mode controls (a type, so it fits the SDK's `Record<string, unknown>`). */
export type ModeContext = {
  mode: Mode;
  /** Left out in `flash`, as DeerFlow's client does. */
  reasoning_effort?: ReasoningEffort;
  thinking_enabled: boolean;
  is_plan_mode: boolean;
  subagent_enabled: boolean;
};

/** What the picker shows for each mode. */
export const MODE_LABELS: Readonly<Record<Mode, string>> = {
  flash: "Flash — fast answers",
  thinking: "Thinking — reasons first",
  pro: "Pro — plans, then acts",
  ultra: "Ultra — plans and delegates",
};

const REASONING_EFFORT: Readonly<Record<Mode, ReasoningEffort | undefined>> = {
  flash: undefined,
  thinking: "low",
  pro: "medium",
  ultra: "high",
};

/** The context flags of `mode` (`docs/gateway-contract.md` §4.3's table). */
export function modeContext(mode: Mode): ModeContext {
  const context: ModeContext = {
    mode,
    thinking_enabled: mode !== "flash",
    is_plan_mode: mode === "pro" || mode === "ultra",
    subagent_enabled: mode === "ultra",
  };
  const effort = REASONING_EFFORT[mode];
  if (effort !== undefined) context.reasoning_effort = effort;
  return context;
}

/** `value` as a mode, or `null` when it is not one. */
export function parseMode(value: unknown): Mode | null {
  return MODES.find((mode) => mode === value) ?? null;
}

/** What the client remembers between visits. */
export interface Settings {
  mode: Mode;
  /** The chosen model's `name`; `null` means the gateway's first model. */
  modelName: string | null;
}

/** The `localStorage` key of the settings. */
export const SETTINGS_KEY = "gateway-web.settings";

/** The settings of a first visit. */
export const DEFAULT_SETTINGS: Readonly<Settings> = { mode: "flash", modelName: null };

/** The part of `Storage` the settings need (a `Map` stands in for it in tests). */
export interface SettingsStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** The stored settings; anything unreadable falls back to the defaults, field by field. */
export function loadSettings(storage: SettingsStorage): Settings {
  let stored: unknown;
  try {
    stored = JSON.parse(storage.getItem(SETTINGS_KEY) ?? "null");
  } catch {
    stored = null;
  }
  const record = typeof stored === "object" && stored !== null ? (stored as Record<string, unknown>) : {};
  return {
    mode: parseMode(record.mode) ?? DEFAULT_SETTINGS.mode,
    modelName: typeof record.modelName === "string" ? record.modelName : DEFAULT_SETTINGS.modelName,
  };
}

/** Stores `settings`. */
export function saveSettings(storage: SettingsStorage, settings: Settings): void {
  storage.setItem(SETTINGS_KEY, JSON.stringify(settings));
}
