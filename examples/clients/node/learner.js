#!/usr/bin/env node
// A littlestone learner in Node.js, written from PROTOCOL.md alone.
//
// It plays Halving on thresholds:n=N against the server's random-target: the class is
// h_a(x) = 1 iff x < a, for a = 0..N, over the instances x = 0..N-1 (PROTOCOL.md,
// the class families). Halving predicts the majority vote of the thresholds still
// consistent with every label, so it errs at most log2(N+1) times.
//
//   LITTLESTONE_TOKEN=... node learner.js ws://127.0.0.1:8765 [N] [ROUNDS] [SEED]
//
// The URL may come from $LITTLESTONE_URL instead. It prints one JSON line: the game, its
// status, its own count of mistakes beside the server's, and whether the revealed game
// key opens the commitment (section 7); it exits 0 when the game is complete and the
// counts agree, else 1.
//
// It needs only a WebSocket client and msgpack: ws (vendored in vendor/ws, MIT) and
// @msgpack/msgpack (the copy the server's page vendors).
"use strict";

const crypto = require("node:crypto");
const path = require("node:path");
const WebSocket = require("./vendor/ws");
const msgpack = require(path.join(__dirname, "..", "..", "..", "littlestone", "server",
                                  "web", "static", "msgpack.min.js"));

const url = process.argv[2] || process.env.LITTLESTONE_URL;
const n = Number(process.argv[3] || 8);
const rounds = Number(process.argv[4] || 50);
const seed = Number(process.argv[5] || 7);
if (!url || !Number.isInteger(n) || n < 1 || !Number.isInteger(rounds) || rounds < 1) {
  console.error("usage: node learner.js URL [N] [ROUNDS] [SEED] (or $LITTLESTONE_URL)");
  process.exit(2);
}

// Section 1: one msgpack map in each binary frame, no compression.
const ws = new WebSocket(url, { perMessageDeflate: false });
const send = (message) => ws.send(msgpack.encode(message));

let alive = Array.from({ length: n + 1 }, (_, a) => a); // the thresholds still consistent
let start = null;
let lastX = null;
let lastP = null;
let faulted = false; // section 6: a learner's fault costs it the round, a mistake
let mistakes = 0;

function learn(label) { // the label of the round before travels with the next frame
  if (!label) return;
  if (faulted || lastP !== label.y) mistakes += 1;
  faulted = false;
  const consistent = alive.filter((a) => Number(lastX < a) === label.y);
  alive = consistent.length ? consistent : alive;
}

ws.on("open", () => {
  send({ type: "hello", version: 1, role: "learner", agent: "node-halving",
         token: process.env.LITTLESTONE_TOKEN || null, capabilities: [] });
});

ws.on("message", (data) => {
  const message = msgpack.decode(data);
  switch (message.type) {
    case "welcome": // section 4: a game against a server-side agent
      send({ type: "challenge", opponent: "random-target", seed,
             rules: { game: "mistake-bound", class: `thresholds:n=${n}`, experts: null,
                      rounds, horizon: rounds } });
      break;
    case "start":
      start = message;
      break;
    case "instance": { // section 5.1
      learn(message.label);
      lastX = message.x;
      const votes = alive.filter((a) => lastX < a).length;
      lastP = 2 * votes >= alive.length ? 1 : 0;
      send({ type: "predict", t: message.t, p: lastP });
      break;
    }
    case "end": {
      learn(message.label);
      const key = Buffer.from(message.key || []);
      const opens = start !== null && key.length === 32 && crypto.createHash("sha256")
        .update(key).digest().equals(Buffer.from(start.commitment));
      const result = message.result || {};
      const out = { game_id: start && start.game_id, status: message.status,
                    rounds: result.rounds, mistakes, server_mistakes: result.mistakes,
                    key_opens_commitment: opens };
      console.log(JSON.stringify(out));
      process.exitCode = message.status === "complete" && mistakes === result.mistakes
        && opens ? 0 : 1;
      ws.close(1000);
      break;
    }
    case "error": // section 6: a fatal one closes the connection; in a game, a fault
      console.error(`littlestone: ${message.code}: ${message.message}`);
      if (message.fatal) process.exitCode = 1;
      else if (lastP !== null) faulted = true;
      break;
    default: // section 8: message types of later versions are ignored
      break;
  }
});

ws.on("error", (error) => {
  console.error(`littlestone: ${error.message}`);
  process.exitCode = 1;
});
