// The literal unions and enums of a protocol's event schema, read from its official package's zod
// schema, as the JSON keyless's readers check events against (issue 45, finding 2):
//
//   node scripts/schema-enums.mjs ag-ui  examples/ag-ui-agent/client \
//     > harness/runner/src/driver/ag_ui/schema_enums.json
//   node scripts/schema-enums.mjs ai-sdk examples/ai-sdk-chat \
//     > harness/runner/src/driver/ai_sdk/schema_enums.json
//
// The second argument is the folder whose node_modules hold the package (`npm ci` there, from its
// lockfile). The examples' check.sh run it and fail when the committed file differs, so a new
// package version's enums reach keyless only through a reviewed change of that file.
//
// Output: {"package", "types": [each event type, as its `type` literal], "fields": [{"type",
// "path", "values", "required"}]}. A path is the field's keys from the event, `[]` after an array
// (`messages[].role`); a field several variants of a union share (a message's `role`) holds every
// variant's values; `required` says whether the field must be present where its parent is.
import { createRequire } from "node:module";
import path from "node:path";

const [protocol, folder] = process.argv.slice(2);
if (!["ag-ui", "ai-sdk"].includes(protocol) || !folder) {
  console.error("usage: node scripts/schema-enums.mjs ag-ui|ai-sdk <folder with node_modules>");
  process.exit(2);
}
const require = createRequire(path.resolve(folder, "package.json"));

// The def of a zod v4 schema.
const def = (schema) => schema._zod.def;

// Each event variant of the protocol's schema, and the package it comes from.
function variants() {
  if (protocol === "ag-ui") {
    const { EventSchema } = require("@ag-ui/core/schemas");
    const { version } = require("@ag-ui/core/package.json");
    return { package: `@ag-ui/core@${version}`, options: def(EventSchema).options };
  }
  // `ai` keeps uiMessageChunkSchema's zod schema inside a closure (only its JSON Schema, which
  // cannot render the `data-*` custom type, and a validator are exposed): each zod schema made
  // while it is built is seen as zod's constructor first reads `_zod` on it, through a getter
  // that is removed right after.
  const made = [];
  Object.defineProperty(Object.prototype, "_zod", {
    configurable: true,
    get() {
      made.push(this);
      return undefined;
    },
  });
  let chunk;
  try {
    require("ai").uiMessageChunkSchema();
  } finally {
    delete Object.prototype._zod;
  }
  const literal = (option) => def(def(option).shape.type).values?.[0];
  chunk = made.find(
    (schema) =>
      schema._zod?.def?.type === "union" &&
      def(schema).options.some((option) => def(option).shape?.type && literal(option) === "text-start"),
  );
  if (!chunk) throw new Error("uiMessageChunkSchema's union was not found in `ai`");
  const { version } = require("ai/package.json");
  return { package: `ai@${version}`, options: def(chunk).options };
}

// Adds every enum and literal below `schema` at `at` to `fields` (path → {values, required}).
function walk(schema, at, required, fields) {
  const d = def(schema);
  switch (d.type) {
    case "optional":
      return walk(d.innerType, at, false, fields);
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
    case "nonoptional":
    case "catch":
      return walk(d.innerType, at, required, fields);
    case "pipe":
      return walk(d.in, at, required, fields);
    case "lazy":
      return walk(d.getter(), at, required, fields);
    case "object":
      for (const [key, field] of Object.entries(d.shape)) {
        walk(field, at ? `${at}.${key}` : key, true, fields);
      }
      return;
    case "array":
      return walk(d.element, `${at}[]`, true, fields);
    case "union":
      for (const option of d.options) walk(option, at, required, fields);
      return;
    case "enum":
      return add(fields, at, Object.values(d.entries), required);
    case "literal":
      return add(fields, at, d.values, required);
    default:
      return;
  }
}

function add(fields, at, values, required) {
  const field = fields.get(at) ?? { values: [], required: true };
  for (const value of values) {
    if (typeof value !== "string") throw new Error(`${at}: a literal that is not a string: ${value}`);
    if (!field.values.includes(value)) field.values.push(value);
  }
  field.required &&= required;
  fields.set(at, field);
}

const { package: name, options } = variants();
const types = [];
const fields = [];
for (const option of options) {
  const shape = def(option).shape;
  const type = def(shape.type);
  if (type.type !== "literal") continue; // the AI SDK's `data-*` (a custom check, no literal)
  const [event] = type.values;
  types.push(event);
  const found = new Map();
  for (const [key, field] of Object.entries(shape)) {
    if (key !== "type") walk(field, key, true, found);
  }
  for (const [at, { values, required }] of found) {
    fields.push({ type: event, path: at, values, required });
  }
}
console.log(JSON.stringify({ package: name, types, fields }, null, 2));
