// Node's own `fetch` against a recorded HTTP API's base URL (`{http_url:tavily}`): one Tavily
// search with the key in the JSON body and as a bearer token. Prints one JSON line with the
// status and the parsed answer, which the test compares between the recording and its replay.
//
// Usage: node check_http_fetch.mjs <base_url> (the key is read from TAVILY_API_KEY).
const base = process.argv[2].replace(/\/$/, "");
const key = process.env.TAVILY_API_KEY;
const answer = await fetch(`${base}/search`, {
  method: "POST",
  headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
  body: JSON.stringify({ api_key: key, query: "fetch: weather in Lima", max_results: 2 }),
});
console.log(JSON.stringify({ fetch: { status: answer.status, body: await answer.json() } }));
