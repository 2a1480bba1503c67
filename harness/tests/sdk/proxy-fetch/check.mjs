// Node's `fetch` through `undici`'s `EnvHttpProxyAgent` (pinned in this folder's lockfile):
// the agent reads HTTPS_PROXY / NO_PROXY as keyless's forward-proxy mode sets them, and Node
// trusts the run's CA through NODE_EXTRA_CA_CERTS. One Tavily search with the key in the JSON
// body and as a bearer token; prints one JSON line with the status and the parsed answer, which
// harness/tests/http_clients.rs compares between the recording and its replay.
//
// Usage: node check.mjs <base_url> (the key is read from TAVILY_API_KEY).
import { EnvHttpProxyAgent, fetch } from "undici";

const base = process.argv[2].replace(/\/$/, "");
const key = process.env.TAVILY_API_KEY;
const answer = await fetch(`${base}/search`, {
  method: "POST",
  dispatcher: new EnvHttpProxyAgent(),
  headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
  body: JSON.stringify({ api_key: key, query: "undici: weather in Quito", max_results: 2 }),
});
console.log(JSON.stringify({ undici: { status: answer.status, body: await answer.json() } }));
