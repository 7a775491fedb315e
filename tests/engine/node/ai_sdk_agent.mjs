// A tool-using agent on the Vercel AI SDK with its default OpenAI provider (@ai-sdk/openai,
// which speaks the Responses API), as tests/engine/test_proxy_node.py drives it:
//   node ai_sdk_agent.mjs BASE_URL API_KEY SYSTEM TASK [stream]
// It reads config.toml (fixed text) and multiplies, then prints its final text as JSON.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText, stepCountIs, tool } from "ai";
import { z } from "zod";

const [baseURL, apiKey, system, prompt, mode] = process.argv.slice(2);
const files = { "config.toml": 'name = "demo"\nport = 8080\n' };
const openai = createOpenAI({ baseURL, apiKey });
const tools = {
  read_file: tool({
    description: "Read a text file.",
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => files[path] ?? "no such file",
  }),
  calculator: tool({
    description: "Evaluate arithmetic.",
    inputSchema: z.object({ expression: z.string() }),
    execute: async ({ expression }) => {
      const [left, right] = expression.split("*").map((part) => Number(part.trim()));
      return String(left * right);
    },
  }),
};
const args = { model: openai("demo-model"), system, prompt, tools, stopWhen: stepCountIs(5), maxRetries: 0 };
let text;
if (mode === "stream") {
  let failure;
  const result = streamText({ ...args, onError: ({ error }) => { failure = error; } });
  text = await result.text.catch((error) => { throw failure ?? error; });
} else {
  text = (await generateText(args)).text;
}
process.stdout.write(JSON.stringify({ text }) + "\n");
