"""The official clients' embeddings calls against the model server's embeddings routes.

Usage: check_embeddings.py <model server URL> <all | miss>

`all` embeds a few documents and a question with each client: `openai`'s
`embeddings.create` (`encoding_format="float"`, the default, which asks for base64 and decodes
it, and an explicit `"base64"` decoded here), LangChain's `OpenAIEmbeddings`
(`embed_documents`, `embed_query`), the `ollama` client's `embed` and `embeddings`,
`google-genai`'s `models.embed_content`, and boto3's `invoke_model` on Amazon Titan Text
Embeddings v2 and Cohere Embed. Prints one JSON line: for each call, the client, its input
texts, and each vector as the bits of the f32 each float is (so a comparison is bit for bit).

`miss` makes the `openai` and `ollama` calls with one document's text changed and prints, for
each, the status and message of the error the client raised.
"""

import base64
import json
import struct
import sys

import boto3
import ollama
import openai
from google import genai
from google.genai import types
from langchain_openai import OpenAIEmbeddings

DOCS = ["Keyless replays recorded model calls.", "Embeddings are recorded as f32 bytes.",
        "A changed document is a miss."]
QUESTION = "How are embeddings stored?"
OPENAI_MODEL = "text-embedding-3-small"
OLLAMA_MODEL = "nomic-embed-text"


def bits(vector):
    return list(struct.unpack(f"<{len(vector)}I", struct.pack(f"<{len(vector)}f", *vector)))


def seen(client, inputs, vectors):
    return {"client": client, "inputs": inputs, "bits": [bits(v) for v in vectors]}


def run_all(url):
    gpt = openai.OpenAI(base_url=url + "/v1", api_key="not-a-key", max_retries=0)
    out = []
    answer = gpt.embeddings.create(model=OPENAI_MODEL, input=DOCS, encoding_format="float")
    out.append(seen("openai float", DOCS, [d.embedding for d in answer.data]))
    answer = gpt.embeddings.create(model=OPENAI_MODEL, input=DOCS)
    out.append(seen("openai default (base64, decoded)", DOCS, [d.embedding for d in answer.data]))
    answer = gpt.embeddings.create(model=OPENAI_MODEL, input=DOCS, encoding_format="base64")
    raw = [base64.b64decode(d.embedding) for d in answer.data]
    out.append({"client": "openai base64", "inputs": DOCS,
                "bits": [list(struct.unpack(f"<{len(r) // 4}I", r)) for r in raw]})
    lc = OpenAIEmbeddings(model=OPENAI_MODEL, base_url=url + "/v1", api_key="not-a-key",
                          check_embedding_ctx_length=False, max_retries=0)
    out.append(seen("langchain OpenAIEmbeddings.embed_documents", DOCS, lc.embed_documents(DOCS)))
    out.append(seen("langchain OpenAIEmbeddings.embed_query", [QUESTION],
                    [lc.embed_query(QUESTION)]))
    local = ollama.Client(host=url)
    out.append(seen("ollama embed", DOCS, local.embed(model=OLLAMA_MODEL, input=DOCS).embeddings))
    out.append(seen("ollama embeddings", [QUESTION],
                    [local.embeddings(model=OLLAMA_MODEL, prompt=QUESTION).embedding]))
    gemini = genai.Client(api_key="not-a-key",
                          http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
    answer = gemini.models.embed_content(model="text-embedding-004", contents=DOCS)
    out.append(seen("google-genai embed_content", DOCS, [e.values for e in answer.embeddings]))
    bedrock = boto3.client("bedrock-runtime", endpoint_url=url, region_name="us-east-1",
                           aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="not-a-secret")
    answer = bedrock.invoke_model(modelId="amazon.titan-embed-text-v2:0",
                                  body=json.dumps({"inputText": QUESTION, "dimensions": 1024}))
    titan = json.loads(answer["body"].read())
    out.append(seen("boto3 invoke_model titan", [QUESTION], [titan["embedding"]]))
    answer = bedrock.invoke_model(modelId="cohere.embed-english-v3",
                                  body=json.dumps({"texts": DOCS, "input_type": "search_document"}))
    cohere = json.loads(answer["body"].read())
    out.append(seen("boto3 invoke_model cohere", DOCS, cohere["embeddings"]))
    return out


def run_miss(url):
    changed = [DOCS[0], "A changed document text.", DOCS[2]]
    out = []
    gpt = openai.OpenAI(base_url=url + "/v1", api_key="not-a-key", max_retries=0)
    try:
        gpt.embeddings.create(model=OPENAI_MODEL, input=changed, encoding_format="float")
        out.append({"client": "openai", "status": 200, "message": "answered"})
    except openai.APIStatusError as err:
        out.append({"client": "openai", "status": err.status_code, "message": str(err)})
    try:
        ollama.Client(host=url).embed(model=OLLAMA_MODEL, input=changed)
        out.append({"client": "ollama", "status": 200, "message": "answered"})
    except ollama.ResponseError as err:
        out.append({"client": "ollama", "status": err.status_code, "message": str(err)})
    return out


if __name__ == "__main__":
    url, mode = sys.argv[1], sys.argv[2]
    print(json.dumps(run_all(url) if mode == "all" else run_miss(url)))
