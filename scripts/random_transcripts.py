#!/usr/bin/env python3
"""Random transcripts of hostile shape, seeded: OpenAI chat, Anthropic
Messages, Gemini contents, Responses input, Claude Code JSONL and Cline
histories, with what real logs hold that a tidy generator leaves out:
call ids given twice (in one turn and across turns), results missing, out
of order or without an id, results that are JSON rows, errors or empty,
images, text in many scripts (CJK, emoji) and escapes.

    python3 scripts/random_transcripts.py OUT SEED FORMAT [--scale N]

FORMAT: openai, anthropic, gemini, responses, claude-code, cline, bedrock,
langchain, codex, pi, open-webui, chatgpt, librechat, gemini-cli,
qwen-code, droid, opencode, goose, copilot (Copilot CLI), crush, grok-cli, sharegpt, hf-chat,
continue, zed, amazon-q, cursor, kimi-code, openhands, letta, copilot-chat (VS Code),
agents-sdk (OpenAI Agents SDK run states), grok-build, claude-ai, amp.
--scale N makes the conversations about N times longer; `--list` prints the
formats. Used by
scripts/invariants.py, and by scripts/same_outputs.py --random.
"""

import argparse
import base64
import json
import random
import sys

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000100000000808060000001f15c4890000000d4944415478da63f8cfc0f01f0005fe02fe2d9f8c6e0000000049454e44ae426082"
    )
).decode()
WORDS = 'alpha beta gamma src/main.rs /etc/hosts 12345 error: failed OK ok def fn class SELECT * FROM users; {"a":1} 日本語 émoji 🎉 path/to/file.py line 42 the of and'.split()
TOOLS = ["read_file", "bash", "search", "write_file", "edit"]


def text(r, n=None):
    n = n or r.randint(1, 40)
    return " ".join(r.choice(WORDS) for _ in range(n))


def args(r):
    return {"path": f"src/{r.choice(['a','b','c'])}.rs", "cmd": text(r, r.randint(1, 8))}


def result_text(r):
    k = r.random()
    if k < 0.15:
        return json.dumps([{"id": i, "name": text(r, 2)} for i in range(r.randint(0, 6))])
    if k < 0.25:
        return "Error: " + text(r, 5)
    if k < 0.3:
        return ""
    return "\n".join(text(r) for _ in range(r.randint(1, 8)))


def first_text(content):
    """A message's content as text: itself, or its first part's text."""
    return content if isinstance(content, str) else content[0]["text"]


def ident(r, k):
    return r.choice(
        [f"call_{k}", f"call_{k}", f"call_{k}", f"call_{r.randint(0, 3)}", f"toolu_{k:04d}"]
    )


def openai(r):
    msgs = []
    if r.random() < 0.7:
        msgs.append({"role": "system", "content": text(r)})
    if r.random() < 0.05:
        msgs.append({"role": "assistant", "content": text(r)})  # an agent that speaks first
    k = 0
    for _ in range(r.randint(1, 12 * S)):
        u = text(r)
        if r.random() < 0.2:
            u = [
                {"type": "text", "text": u},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}},
            ]
        msgs.append({"role": "user", "content": u})
        for _ in range(r.randint(0, 4)):
            calls = []
            for _ in range(r.randint(1, 3 * (2 if S > 1 else 1))):
                k += 1
                calls.append(
                    {
                        "id": ident(r, k),
                        "type": "function",
                        "function": {"name": r.choice(TOOLS), "arguments": json.dumps(args(r))},
                    }
                )
            m = {
                "role": "assistant",
                "content": text(r) if r.random() < 0.3 else None,
                "tool_calls": calls,
            }
            msgs.append(m)
            order = calls[:]
            if r.random() < 0.2:
                r.shuffle(order)
            for c in order:
                if r.random() < 0.07:
                    continue
                t = {"role": "tool", "tool_call_id": c["id"], "content": result_text(r)}
                if r.random() < 0.05:
                    del t["tool_call_id"]
                msgs.append(t)
        if r.random() < 0.85:
            msgs.append({"role": "assistant", "content": text(r)})
    return {"model": "gpt-4o", "messages": msgs}


def anthropic(r):
    msgs = []
    k = 0
    for _ in range(r.randint(1, 10 * S)):
        content = [{"type": "text", "text": text(r)}]
        if r.random() < 0.2:
            content.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                }
            )
        msgs.append({"role": "user", "content": content if r.random() < 0.7 else text(r)})
        for _ in range(r.randint(0, 4)):
            uses = []
            for _ in range(r.randint(1, 3 * (2 if S > 1 else 1))):
                k += 1
                uses.append(
                    {
                        "type": "tool_use",
                        "id": ident(r, k),
                        "name": r.choice(TOOLS),
                        "input": args(r),
                    }
                )
            pre = [{"type": "text", "text": text(r)}] if r.random() < 0.4 else []
            msgs.append({"role": "assistant", "content": pre + uses})
            res = []
            for u in uses:
                if r.random() < 0.07:
                    continue
                c = result_text(r)
                b = {
                    "type": "tool_result",
                    "tool_use_id": u["id"],
                    "content": c if r.random() < 0.6 else [{"type": "text", "text": c}],
                }
                if r.random() < 0.1:
                    b["is_error"] = True
                res.append(b)
            if r.random() < 0.2:
                res.append({"type": "text", "text": text(r)})
            if res:
                msgs.append({"role": "user", "content": res})
        if r.random() < 0.85:
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": text(r)}]})
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": msgs}
    if r.random() < 0.6:
        body["system"] = text(r)
    return body


def gemini(r):
    contents = []
    for _ in range(r.randint(1, 10 * S)):
        said = [{"text": text(r)}]
        if r.random() < 0.2:
            said.append({"inlineData": {"mimeType": "image/png", "data": PNG}})
        contents.append({"role": "user", "parts": said})
        for _ in range(r.randint(0, 4)):
            names = [r.choice(TOOLS) for _ in range(r.randint(1, 3))]
            contents.append(
                {
                    "role": "model",
                    "parts": [{"functionCall": {"name": n, "args": args(r)}} for n in names],
                }
            )
            order = names[:]
            if r.random() < 0.3:
                r.shuffle(order)
            parts = [
                {"functionResponse": {"name": n, "response": {"output": result_text(r)}}}
                for n in order
                if r.random() > 0.07
            ]
            if parts:
                contents.append({"role": "user", "parts": parts})
        if r.random() < 0.85:
            contents.append({"role": "model", "parts": [{"text": text(r)}]})
    return {"contents": contents}


def responses(r):
    items = []
    k = 0
    for _ in range(r.randint(1, 10 * S)):
        said = [{"type": "input_text", "text": text(r)}]
        if r.random() < 0.2:
            said.append({"type": "input_image", "image_url": "data:image/png;base64," + PNG})
        items.append({"type": "message", "role": "user", "content": said})
        for _ in range(r.randint(0, 4)):
            calls = []
            for _ in range(r.randint(1, 3 * (2 if S > 1 else 1))):
                k += 1
                calls.append(
                    {
                        "type": "function_call",
                        "call_id": ident(r, k),
                        "name": r.choice(TOOLS),
                        "arguments": json.dumps(args(r)),
                    }
                )
            items += calls
            for c in calls:
                if r.random() < 0.07:
                    continue
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": c["call_id"],
                        "output": result_text(r),
                    }
                )
        if r.random() < 0.85:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text(r)}],
                }
            )
    return {"model": "gpt-4.1", "input": items}


GEN = {"openai": openai, "anthropic": anthropic, "gemini": gemini, "responses": responses}


def claude_code(r):
    body = anthropic(r)
    lines = []
    parent = None
    n = 0

    def line(kind, message, extra=None):
        nonlocal parent, n
        n += 1
        u = f"00000000-0000-4000-8000-{n:012d}"
        d = {
            "parentUuid": parent,
            "isSidechain": False,
            "type": kind,
            "message": message,
            "uuid": u,
            "sessionId": "s1",
            "timestamp": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
            "cwd": "/w",
            "version": "1.0.0",
        }
        if extra:
            d.update(extra)
        lines.append(d)
        parent = u

    for k, m in enumerate(body["messages"]):
        if m["role"] == "assistant":
            blocks = m["content"]
            split = r.random() < 0.6
            mid = f"msg_{k:05d}"
            groups = [[b] for b in blocks] if split else [blocks]
            for g in groups:
                line(
                    "assistant",
                    {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5",
                        "content": g,
                        "stop_reason": None,
                        "usage": {
                            "input_tokens": 10 + k,
                            "output_tokens": 5,
                            "cache_read_input_tokens": 100 * k,
                            "cache_creation_input_tokens": 7,
                        },
                    },
                )
        else:
            extra = None
            if isinstance(m["content"], list) and any(
                b.get("type") == "tool_result" for b in m["content"]
            ):
                extra = {"toolUseResult": {"stdout": "x", "stderr": ""}}
            line("user", {"role": "user", "content": m["content"]}, extra)
    if r.random() < 0.3:
        lines.insert(
            r.randint(0, len(lines)),
            {"type": "summary", "summary": text(r, 4), "leafUuid": lines[-1]["uuid"]},
        )
    return lines


def cline(r):
    msgs = []
    for _ in range(r.randint(1, 8 * S)):
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": "<task>\n" + text(r) + "\n</task>"}],
            }
        )
        for _ in range(r.randint(0, 4)):
            tool = r.choice(["read_file", "execute_command", "search_files"])
            param = {"read_file": "path", "execute_command": "command", "search_files": "regex"}[
                tool
            ]
            val = text(r, 2)
            pre = text(r) + "\n\n" if r.random() < 0.6 else ""
            msgs.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "text",
                            "text": f"{pre}<{tool}>\n<{param}>{val}</{param}>\n</{tool}>",
                        }
                    ],
                }
            )
            if r.random() < 0.93:
                msgs.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": f"[{tool} for '{val}'] Result:"},
                            {"type": "text", "text": result_text(r)},
                            {
                                "type": "text",
                                "text": "<environment_details>\n# VSCode Visible Files\n"
                                + text(r, 3)
                                + "\n</environment_details>",
                            },
                        ],
                    }
                )
        if r.random() < 0.8:
            msgs.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "text",
                            "text": "<attempt_completion>\n<result>\n"
                            + text(r)
                            + "\n</result>\n</attempt_completion>",
                        }
                    ],
                }
            )
    return msgs


def bedrock(r):
    """Bedrock Converse, from an Anthropic body: text, image, toolUse and
    toolResult blocks (text or json content, error status)."""
    body = anthropic(r)
    msgs = []
    for m in body["messages"]:
        c = m["content"]
        if isinstance(c, str):
            c = [{"type": "text", "text": c}]
        blocks = []
        for b in c:
            if b["type"] == "text":
                blocks.append({"text": b["text"]})
            elif b["type"] == "image":
                raw = {"bytes": b["source"]["data"]}
                blocks.append({"image": {"format": "png", "source": raw}})
            elif b["type"] == "tool_use":
                blocks.append(
                    {"toolUse": {"toolUseId": b["id"], "name": b["name"], "input": b["input"]}}
                )
            else:
                t = b["content"] if isinstance(b["content"], str) else b["content"][0]["text"]
                part = {"text": t}
                if t.startswith("[") and r.random() < 0.7:
                    part = {"json": json.loads(t)}
                res = {"toolUseId": b["tool_use_id"], "content": [part]}
                if b.get("is_error") or r.random() < 0.3:
                    res["status"] = "error" if b.get("is_error") else "success"
                blocks.append({"toolResult": res})
        msgs.append({"role": m["role"], "content": blocks})
    out = {"modelId": "anthropic.claude-3-7-sonnet-20250219-v1:0", "messages": msgs}
    if "system" in body:
        out["system"] = [{"text": body["system"]}]
    return out


def langchain(r):
    """LangChain's messages_to_dict, from an OpenAI body."""
    out = []
    for m in openai(r)["messages"]:
        role = m["role"]
        base = {"additional_kwargs": {}, "response_metadata": {}, "name": None, "id": None}
        if role in ("system", "user"):
            kind = "system" if role == "system" else "human"
            out.append({"type": kind, "data": dict(base, content=m["content"], type=kind)})
        elif role == "assistant":
            calls = [
                {
                    "name": c["function"]["name"],
                    "args": json.loads(c["function"]["arguments"]),
                    "id": c["id"],
                    "type": "tool_call",
                }
                for c in m.get("tool_calls", [])
            ]
            d = dict(base, content=m["content"] or "", type="ai", tool_calls=calls)
            d["invalid_tool_calls"] = []
            out.append({"type": "ai", "data": d})
        else:
            d = dict(base, content=m["content"], type="tool", status="success")
            d["tool_call_id"] = m.get("tool_call_id", "")
            out.append({"type": "tool", "data": d})
    return out


def codex(r):
    """A Codex CLI rollout: response items (messages, function calls and
    their outputs, reasoning) between event messages and turn contexts,
    from a Responses input."""
    lines = [
        {
            "timestamp": "2026-01-01T00:00:00.000Z",
            "type": "session_meta",
            "payload": {
                "id": "s1",
                "cwd": "/w",
                "originator": "codex_cli_rs",
                "cli_version": "0.1",
            },
        }
    ]
    n = 0

    def line(kind, payload):
        nonlocal n
        n += 1
        stamp = f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
        lines.append({"timestamp": stamp, "type": kind, "payload": payload})

    for item in responses(r)["input"]:
        if item.get("role") == "user":
            said = item["content"][0]["text"]
            line("event_msg", {"type": "user_message", "message": said, "images": []})
            line("turn_context", {"cwd": "/w", "model": "gpt-5", "approval_policy": "never"})
        if item["type"] == "function_call" and r.random() < 0.2:
            line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"})
        line("response_item", item)
        if item["type"] == "function_call_output" and r.random() < 0.5:
            usage = {"input_tokens": 100 * n, "cached_input_tokens": 90 * n, "output_tokens": 9}
            info = {"total_token_usage": usage, "last_token_usage": usage}
            line("event_msg", {"type": "token_count", "info": info})
    return lines


def pi(r):
    """A pi session: a tree of entries by parentId (one branch), from an
    OpenAI body."""
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "s1",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/w",
        }
    ]
    parent = None
    names = {}
    for k, m in enumerate(openai(r)["messages"]):
        role = m["role"]
        if role == "system":
            continue
        if role == "user":
            c = m["content"]
            if isinstance(c, list):
                c = [
                    {"type": "text", "text": c[0]["text"]},
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                ]
            msg = {"role": "user", "content": c}
        elif role == "assistant":
            content = [{"type": "text", "text": m["content"]}] if m["content"] else []
            for c in m.get("tool_calls", []):
                names[c["id"]] = c["function"]["name"]
                args_ = json.loads(c["function"]["arguments"])
                content.append(
                    {
                        "type": "toolCall",
                        "id": c["id"],
                        "name": c["function"]["name"],
                        "arguments": args_,
                    }
                )
            stop = "toolUse" if m.get("tool_calls") else "stop"
            msg = {"role": "assistant", "content": content, "stopReason": stop}
        else:
            if "tool_call_id" not in m:
                continue
            msg = {
                "role": "toolResult",
                "toolCallId": m["tool_call_id"],
                "toolName": names.get(m["tool_call_id"], "bash"),
                "content": [{"type": "text", "text": m["content"]}],
                "isError": m["content"].startswith("Error"),
            }
        me = f"e{k}"
        lines.append(
            {
                "type": "message",
                "id": me,
                "parentId": parent,
                "timestamp": f"2026-01-01T00:00:{k % 60:02d}.000Z",
                "message": msg,
            }
        )
        parent = me
    return lines


def open_webui(r):
    """An Open WebUI export: chat rows whose history is a tree of messages
    (an abandoned branch now and then) kept in step with the linear
    `messages`, tool calls and results embedded in the assistant's content
    as `<details type="tool_calls">` with HTML-escaped JSON attributes."""
    import html

    def details(k):
        cid = ident(r, k)
        a = html.escape(json.dumps(args(r)), quote=True)
        res = html.escape(json.dumps(result_text(r)), quote=True)
        return (
            f'<details type="tool_calls" done="true" id="{cid}" name="{r.choice(TOOLS)}" '
            f'arguments="{a}" result="{res}" files="" embeds="">\n'
            "<summary>Tool Executed</summary>\n</details>\n"
        )

    rows = []
    for c in range(r.randint(1, 2)):
        msgs, parent, k = {}, None, 0
        line = []

        def add(role, content, parent_id, **extra):
            mid = f"m{c}-{len(msgs)}"
            m = {
                "id": mid,
                "parentId": parent_id,
                "childrenIds": [],
                "role": role,
                "content": content,
                "timestamp": 1744577557 + len(msgs),
                **extra,
            }
            msgs[mid] = m
            if parent_id:
                msgs[parent_id]["childrenIds"].append(mid)
            return mid

        for _ in range(r.randint(1, 6 * S)):
            u = add("user", text(r), parent)
            if r.random() < 0.2:
                add("assistant", text(r), u, model="qwen3:8b", done=True)
            body = ""
            for _ in range(r.randint(0, 3)):
                k += 1
                body += (text(r, 3) + "\n" if r.random() < 0.3 else "") + details(k)
            body += text(r) if r.random() < 0.9 else ""
            usage = {"prompt_tokens": 10 * k, "completion_tokens": 5, "total_tokens": 10 * k + 5}
            a = add("assistant", body, u, model="qwen3:8b", done=True, usage=usage)
            parent = a
            line += [u, a]
        chat = {
            "id": f"c{c}",
            "title": text(r, 3),
            "models": ["qwen3:8b"],
            "params": {},
            "history": {"messages": msgs, "currentId": parent},
            "messages": [msgs[i] for i in line],
            "tags": [],
            "timestamp": 1744577557,
            "files": [],
        }
        rows.append(
            {
                "id": f"c{c}",
                "user_id": "u",
                "title": chat["title"],
                "chat": chat,
                "updated_at": 1744577600,
                "created_at": 1744577557,
                "share_id": None,
                "archived": False,
                "pinned": False,
                "meta": {},
                "folder_id": None,
            }
        )
    return rows


def chatgpt(r):
    """A ChatGPT data export: conversations whose messages are the nodes of
    a `mapping` tree, the conversation the branch to `current_node`;
    regenerated answers (a branch left behind), calls as messages to a
    tool (`recipient`: code, text), the tool's replies (execution output,
    text), and a hidden system message."""
    convs = []
    for c in range(r.randint(1, 2)):
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        n = 0

        def node(parent, role, content, **extra):
            nonlocal n
            n += 1
            nid = f"n{c}-{n}"
            msg = {
                "id": nid,
                "author": {"role": role, "name": extra.pop("name", None), "metadata": {}},
                "create_time": 1756000000.0 + n,
                "update_time": None,
                "content": content,
                "status": "finished_successfully",
                "weight": 1.0,
                "metadata": {},
                "recipient": extra.pop("recipient", "all"),
                "channel": None,
            }
            msg.update(extra)
            mapping[nid] = {"id": nid, "message": msg, "parent": parent, "children": []}
            mapping[parent]["children"].append(nid)
            return nid

        def said(t):
            return {"content_type": "text", "parts": [t]}

        at = node("root", "system", said(""))
        for _ in range(r.randint(1, 6 * S)):
            parts = [text(r)]
            if r.random() < 0.15:
                parts.append(
                    {
                        "content_type": "image_asset_pointer",
                        "asset_pointer": "file-service://file-x",
                        "size_bytes": 100,
                        "width": 16,
                        "height": 8,
                    }
                )
            at = node(at, "user", {"content_type": "text", "parts": parts})
            if r.random() < 0.25:
                node(at, "assistant", said(text(r)))  # regenerated: left behind
            for _ in range(r.randint(0, 3)):
                tool = r.choice(["python", "browser", "bio"])
                code = text(r, r.randint(1, 10))
                if tool == "python" and r.random() < 0.7:
                    call = {"content_type": "code", "language": "python", "text": code}
                else:
                    call = said(code)
                at = node(at, "assistant", call, recipient=tool)
                if r.random() < 0.9:
                    out = result_text(r)
                    reply = (
                        {"content_type": "execution_output", "text": out}
                        if tool == "python"
                        else said(out)
                    )
                    at = node(at, "tool", reply, name=tool)
            if r.random() < 0.9:
                at = node(at, "assistant", said(text(r)), end_turn=True)
        convs.append(
            {
                "title": text(r, 3),
                "create_time": 1756000000.0,
                "update_time": 1756000100.0,
                "mapping": mapping,
                "current_node": at,
                "conversation_id": f"conv-{c}",
                "id": f"conv-{c}",
                "default_model_slug": "gpt-4o",
            }
        )
    return convs


def librechat(r):
    """A LibreChat export: every branch of the conversation in one list by
    `parentMessageId` (regenerated answers left behind), agents' answers as
    `content` parts whose `tool_call` parts hold each call and its output
    (null now and then), and older answers as `text`."""
    root = "00000000-0000-0000-0000-000000000000"
    msgs, n, at, k = [], 0, root, 0

    def add(parent, user, **extra):
        nonlocal n
        n += 1
        mid = f"m-{n:04d}"
        m = {
            "messageId": mid,
            "conversationId": "c1",
            "parentMessageId": parent,
            "isCreatedByUser": user,
            "sender": "User" if user else "GPT-4",
            "createdAt": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
            "error": False,
            "unfinished": False,
        }
        m.update(extra)
        msgs.append(m)
        return mid

    for _ in range(r.randint(1, 6 * S)):
        at = add(at, True, text=text(r))
        if r.random() < 0.25:
            add(at, False, text=text(r), model="gpt-4o")  # regenerated: left behind
        if r.random() < 0.6:
            parts = []
            for _ in range(r.randint(0, 4)):
                if r.random() < 0.4:
                    parts.append({"type": "text", "text": text(r)})
                k += 1
                call = {"name": r.choice(TOOLS), "args": json.dumps(args(r))}
                if r.random() < 0.95:
                    call["id"] = ident(r, k)
                call["output"] = result_text(r) if r.random() < 0.9 else None
                parts.append({"type": "tool_call", "tool_call": call})
            parts.append({"type": "text", "text": text(r)})
            at = add(at, False, text="", content=parts, model="gpt-4o")
        else:
            at = add(at, False, text=text(r), model="gpt-4o")
    return {
        "conversationId": "c1",
        "endpoint": "agents",
        "title": text(r, 3),
        "exportAt": "2026-01-01T01:00:00.000Z",
        "branches": True,
        "recursive": False,
        "options": {"model": "gpt-4o", "promptPrefix": text(r) if r.random() < 0.5 else None},
        "messages": msgs,
    }


def gemini_cli(r):
    """A Gemini CLI session: user and gemini messages, each gemini
    message's `toolCalls` holding the calls and their results
    (`functionResponse`, an error now and then), thoughts, and info lines."""
    msgs, k = [], 0

    def add(kind, **extra):
        n = len(msgs) + 1
        stamp = f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
        msgs.append({"id": f"m{n}", "timestamp": stamp, "type": kind, **extra})

    for _ in range(r.randint(1, 8 * S)):
        add("user", content=text(r))
        for _ in range(r.randint(0, 3)):
            calls = []
            for _ in range(r.randint(1, 3)):
                k += 1
                name = r.choice(TOOLS)
                cid = f"{name}-{k}" if r.random() < 0.9 else f"{name}-{r.randint(1, 3)}"
                call = {"id": cid, "name": name, "displayName": name, "args": args(r)}
                if r.random() < 0.93:
                    failed = r.random() < 0.1
                    out = {"error": text(r, 4)} if failed else {"output": result_text(r)}
                    call["status"] = "error" if failed else "success"
                    call["resultDisplay"] = text(r, 3)
                    call["result"] = [
                        {"functionResponse": {"id": cid, "name": name, "response": out}}
                    ]
                calls.append(call)
            extra = {}
            if r.random() < 0.3:
                extra["thoughts"] = [{"subject": text(r, 2), "description": text(r)}]
            add(
                "gemini",
                model="gemini-2.5-pro",
                content=text(r) if r.random() < 0.3 else "",
                toolCalls=calls,
                **extra,
            )
        if r.random() < 0.1:
            add("info", content="Request cancelled.")
        if r.random() < 0.85:
            add("gemini", model="gemini-2.5-pro", content=text(r))
    return {
        "sessionId": "s1",
        "projectHash": "ab" * 32,
        "startTime": "2026-01-01T00:00:00.000Z",
        "lastUpdated": "2026-01-01T01:00:00.000Z",
        "messages": msgs,
    }


def qwen_code(r):
    """A Qwen Code session (JSONL, a chain by parentUuid): Gemini parts,
    thoughts, calls with ids and their responses as `tool_result` lines,
    from a Gemini body."""
    lines, parent, k = [], None, 0
    for c in gemini(r)["contents"]:
        parts = c["parts"]
        if c["role"] == "model":
            kind, role = "assistant", "model"
            for p in parts:
                if "functionCall" in p:
                    k += 1
                    p["functionCall"]["id"] = ident(r, k)
            if r.random() < 0.3:
                parts = [{"text": text(r), "thought": True}] + parts
        else:
            kind, role = "user", "user"
            if any("functionResponse" in p for p in parts):
                kind = "tool_result"
                calls = [
                    p["functionCall"] for p in lines[-1]["message"]["parts"] if "functionCall" in p
                ]
                for p, call in zip(parts, calls):
                    p["functionResponse"]["id"] = call.get("id")
        n = len(lines) + 1
        u = f"00000000-0000-4000-8000-{n:012d}"
        line = {
            "uuid": u,
            "parentUuid": parent,
            "sessionId": "s1",
            "timestamp": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
            "type": kind,
            "cwd": "/w",
            "version": "0.0.14",
            "message": {"role": role, "parts": parts},
        }
        if kind == "assistant":
            line["model"] = "qwen3-coder-plus"
        lines.append(line)
        parent = u
    return lines


def droid(r):
    """A Droid session store (JSONL): Anthropic messages as a tree of
    entries by parentId after a `session_start`, from an Anthropic body."""
    lines = [
        {
            "type": "session_start",
            "id": "s1",
            "title": text(r, 3),
            "cwd": "/w",
            "owner": "user",
            "version": "0.81.0",
        }
    ]
    parent = "s1"
    for n, m in enumerate(anthropic(r)["messages"], 1):
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        mid = f"m{n}"
        lines.append(
            {
                "type": "message",
                "id": mid,
                "parentId": parent,
                "timestamp": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                "message": {"role": m["role"], "content": content},
            }
        )
        parent = mid
    return lines


def opencode(r):
    """An OpenCode export (`opencode export`): messages of `info` and
    `parts`; a call and its result are one `tool` part (its `state`:
    completed with output, error, or still running), with step, reasoning
    and text parts around them, from an OpenAI body."""
    msgs, names = [], {}

    def part(mid, kind, **extra):
        n = sum(len(m["parts"]) for m in msgs) + 1
        return {"id": f"prt_{n:05d}", "sessionID": "ses_1", "messageID": mid, "type": kind, **extra}

    for m in openai(r)["messages"]:
        role = m["role"]
        if role == "system":
            continue
        if role == "tool":
            owner = next((x for x in reversed(msgs) if x["info"]["role"] == "assistant"), None)
            tool = next(
                (
                    p
                    for p in (owner or {"parts": []})["parts"]
                    if p.get("callID") == m.get("tool_call_id")
                    and p.get("state", {}).get("status") == "running"
                ),
                None,
            )
            if tool is None:
                continue
            if m["content"].startswith("Error"):
                tool["state"].update(status="error", error=m["content"])
            else:
                tool["state"].update(
                    status="completed", output=m["content"], title=text(r, 2), metadata={}
                )
            continue
        mid = f"msg_{len(msgs):05d}"
        info = {"id": mid, "sessionID": "ses_1", "role": role, "time": {"created": 1767036000000}}
        out = {"info": info, "parts": []}
        msgs.append(out)
        if role == "user":
            c = first_text(m["content"])
            out["parts"].append(part(mid, "text", text=c))
            continue
        info.update(
            modelID="claude-sonnet-4-5",
            providerID="anthropic",
            cost=0.01,
            tokens={"input": 8, "output": 9, "reasoning": 0, "cache": {"read": 10, "write": 2}},
        )
        out["parts"].append(part(mid, "step-start"))
        if r.random() < 0.3:
            out["parts"].append(part(mid, "reasoning", text=text(r)))
        if m["content"]:
            out["parts"].append(part(mid, "text", text=m["content"]))
        for c in m.get("tool_calls", []):
            state = {
                "status": "running",
                "input": json.loads(c["function"]["arguments"]),
                "time": {"start": 1767036001000},
            }
            out["parts"].append(
                part(mid, "tool", callID=c["id"], tool=c["function"]["name"], state=state)
            )
        out["parts"].append(part(mid, "step-finish", reason="stop"))
    return {
        "info": {"id": "ses_1", "title": text(r, 3), "time": {"created": 1767036000000}},
        "messages": msgs,
    }


def goose(r):
    """A Goose session export: `conversation` of Goose messages, calls as
    `toolRequest` and results as `toolResponse` content (success with text
    items for the assistant and the user, or an error), from an Anthropic
    body."""
    conv = []
    for n, m in enumerate(anthropic(r)["messages"]):
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out = []
        for b in content:
            if b["type"] == "text":
                out.append({"type": "text", "text": b["text"]})
            elif b["type"] == "image":
                out.append({"type": "image", "data": b["source"]["data"], "mimeType": "image/png"})
            elif b["type"] == "tool_use":
                call = {"name": b["name"], "arguments": b["input"]}
                out.append(
                    {
                        "type": "toolRequest",
                        "id": b["id"],
                        "toolCall": {"status": "success", "value": call},
                    }
                )
            else:
                t = b["content"] if isinstance(b["content"], str) else b["content"][0]["text"]
                if b.get("is_error"):
                    res = {"status": "error", "error": t}
                else:
                    items = [
                        {"type": "text", "text": t, "annotations": {"audience": ["assistant"]}}
                    ]
                    if r.random() < 0.5:
                        items.append(
                            {
                                "type": "text",
                                "text": text(r, 3),
                                "annotations": {"audience": ["user"], "priority": 0.0},
                            }
                        )
                    res = {"status": "success", "value": items}
                out.append({"type": "toolResponse", "id": b["tool_use_id"], "toolResult": res})
        conv.append(
            {
                "id": f"msg_{n:05d}",
                "role": m["role"],
                "created": 1763456531 + n,
                "content": out,
                "metadata": {"userVisible": True, "agentVisible": True},
            }
        )
    return {
        "id": "20261118_3",
        "working_dir": "/w",
        "name": text(r, 3),
        "session_type": "user",
        "created_at": "2026-11-18T09:02:11Z",
        "updated_at": "2026-11-18T09:05:40Z",
        "conversation": conv,
        "message_count": len(conv),
        "provider_name": "anthropic",
    }


def copilot(r):
    """A Copilot CLI session (`events.jsonl`): events chained by parentId;
    user messages, assistant messages with `toolRequests`, their
    `tool.execution_start` and `tool.execution_complete` events (a failure
    now and then), reasoning, and session events between, from an OpenAI
    body."""
    lines = []

    def event(kind, data):
        n = len(lines) + 1
        lines.append(
            {
                "type": kind,
                "data": data,
                "id": f"e{n}",
                "timestamp": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                "parentId": f"e{n - 1}" if n > 1 else None,
            }
        )

    event(
        "session.start",
        {
            "sessionId": "s1",
            "version": 1,
            "producer": "copilot-agent",
            "selectedModel": "gpt-5-mini",
            "context": {"cwd": "/w"},
        },
    )
    turn = 0
    for m in openai(r)["messages"]:
        role = m["role"]
        if role == "system":
            event("system.message", {"content": m["content"], "role": "system"})
        elif role == "user":
            c = first_text(m["content"])
            event("user.message", {"content": c, "transformedContent": c, "attachments": []})
            if r.random() < 0.2:
                event("session.info", {"infoType": "note", "message": text(r, 3)})
        elif role == "assistant":
            turn += 1
            if r.random() < 0.2:
                event("assistant.reasoning", {"reasoningId": f"r{turn}", "content": text(r)})
            reqs = [
                {
                    "type": "function",
                    "toolCallId": c["id"],
                    "name": c["function"]["name"],
                    "arguments": c["function"]["arguments"],
                }
                for c in m.get("tool_calls", [])
            ]
            event(
                "assistant.message",
                {
                    "content": m["content"] or "",
                    "toolRequests": reqs,
                    "messageId": f"m-{turn}",
                    "turnId": f"turn-{turn}",
                    "model": "gpt-5-mini",
                    "outputTokens": 9,
                },
            )
            for q in reqs:
                if r.random() < 0.5:
                    event(
                        "tool.execution_start",
                        {"toolCallId": q["toolCallId"], "toolName": q["name"]},
                    )
        elif "tool_call_id" in m:
            ok = not m["content"].startswith("Error")
            data = {"toolCallId": m["tool_call_id"], "success": ok}
            if ok:
                data["result"] = {"content": m["content"], "detailedContent": None}
            else:
                data["error"] = {"message": m["content"], "code": "failure"}
            event("tool.execution_complete", data)
    return lines


def crush(r):
    """A Crush session export: messages of typed `parts` (text, reasoning,
    tool_call with its input as a JSON string, finish; a `tool` message of
    tool_result parts, an error now and then), from an Anthropic body."""
    msgs = []
    for n, m in enumerate(anthropic(r)["messages"]):
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        parts, results = [], []
        for b in content:
            if b["type"] == "text":
                parts.append({"type": "text", "data": {"text": b["text"]}})
            elif b["type"] == "image":
                parts.append(
                    {
                        "type": "binary",
                        "data": {
                            "Path": "a.png",
                            "MIMEType": "image/png",
                            "Data": b["source"]["data"],
                        },
                    }
                )
            elif b["type"] == "tool_use":
                parts.append(
                    {
                        "type": "tool_call",
                        "data": {
                            "id": b["id"],
                            "name": b["name"],
                            "input": json.dumps(b["input"]),
                            "provider_executed": False,
                            "finished": True,
                        },
                    }
                )
            else:
                t = b["content"] if isinstance(b["content"], str) else b["content"][0]["text"]
                results.append(
                    {
                        "type": "tool_result",
                        "data": {
                            "tool_call_id": b["tool_use_id"],
                            "name": "view",
                            "content": t,
                            "data": "",
                            "mime_type": "",
                            "metadata": "",
                            "is_error": bool(b.get("is_error")),
                        },
                    }
                )
        if m["role"] == "assistant":
            if r.random() < 0.3:
                parts.insert(
                    0, {"type": "reasoning", "data": {"thinking": text(r), "signature": "Eq"}}
                )
            calls = any(p["type"] == "tool_call" for p in parts)
            parts.append(
                {
                    "type": "finish",
                    "data": {"reason": "tool_use" if calls else "end_turn", "time": 1769501184 + n},
                }
            )
        for role, ps in (("user", parts), ("tool", results)):
            if ps:
                msgs.append(
                    {
                        "id": f"m{len(msgs):04d}",
                        "session_id": "s1",
                        "role": m["role"] if role == "user" else "tool",
                        "parts": ps,
                        "model": None,
                        "created_at": 1769501180 + n,
                        "updated_at": 1769501180 + n,
                        "finished_at": None,
                        "provider": None,
                        "is_summary_message": 0,
                    }
                )
    return {
        "session": {
            "id": "s1",
            "parent_session_id": None,
            "title": text(r, 3),
            "message_count": len(msgs),
            "summary_message_id": None,
        },
        "messages": msgs,
    }


def grok_cli(r):
    """A Grok CLI session export: rows of `message_json` in the AI SDK's
    shape (tool-call and tool-result parts, outputs of type text, json or
    error-text), from an Anthropic body."""
    rows = []
    for m in anthropic(r)["messages"]:
        content = m["content"]
        if isinstance(content, str):
            rows.append((m["role"], {"role": m["role"], "content": content}))
            continue
        parts, results = [], []
        for b in content:
            if b["type"] == "text":
                parts.append({"type": "text", "text": b["text"]})
            elif b["type"] == "image":
                parts.append(
                    {"type": "image", "image": b["source"]["data"], "mediaType": "image/png"}
                )
            elif b["type"] == "tool_use":
                parts.append(
                    {
                        "type": "tool-call",
                        "toolCallId": b["id"],
                        "toolName": b["name"],
                        "input": b["input"],
                    }
                )
            else:
                t = b["content"] if isinstance(b["content"], str) else b["content"][0]["text"]
                if b.get("is_error"):
                    out = {"type": "error-text", "value": t}
                elif r.random() < 0.3:
                    out = {"type": "json", "value": {"success": True, "output": t}}
                else:
                    out = {"type": "text", "value": t}
                results.append(
                    {
                        "type": "tool-result",
                        "toolCallId": b["tool_use_id"],
                        "toolName": "bash",
                        "output": out,
                    }
                )
        if parts:
            rows.append((m["role"], {"role": m["role"], "content": parts}))
        if results:
            rows.append(("tool", {"role": "tool", "content": results}))
    return {
        "session": {
            "id": "s1",
            "workspace_id": "ws_1",
            "title": text(r, 3),
            "model": "grok-code-fast-1",
        },
        "usage_events": [],
        "messages": [
            {
                "session_id": "s1",
                "seq": k + 1,
                "role": role,
                "message_json": mj,
                "created_at": "2026-11-20T09:14:05.331Z",
            }
            for k, (role, mj) in enumerate(rows)
        ],
    }


def sharegpt(r):
    """ShareGPT rows (JSONL, a conversation each), glaive's tool turns:
    `function_call` with a JSON call, `observation` with its result, a
    system prompt now and then, from OpenAI bodies."""
    rows = []
    for _ in range(r.randint(1, 3)):
        turns = []
        for m in openai(r)["messages"]:
            role = m["role"]
            if role == "system":
                turns.append({"from": "system", "value": m["content"]})
            elif role == "user":
                c = first_text(m["content"])
                turns.append({"from": "human", "value": c})
            elif role == "assistant":
                if m["content"]:
                    turns.append({"from": "gpt", "value": m["content"]})
                for c in m.get("tool_calls", []):
                    call = {
                        "name": c["function"]["name"],
                        "arguments": json.loads(c["function"]["arguments"]),
                    }
                    turns.append({"from": "function_call", "value": json.dumps(call)})
            else:
                turns.append({"from": "observation", "value": m["content"]})
        row = {"conversations": turns}
        if r.random() < 0.3:
            row["tools"] = json.dumps([{"name": t, "parameters": {}} for t in TOOLS])
        rows.append(row)
    return rows


def hf_chat(r):
    """Hugging Face chat rows (JSONL): MiniMind's `conversations` whose
    messages keep their tool calls as a JSON text (empty when none), and
    TRL preference rows (`chosen` and `rejected` conversations), from
    OpenAI bodies."""
    rows = []
    for _ in range(r.randint(1, 3)):
        msgs = []
        for m in openai(r)["messages"]:
            c = m.get("content") or ""
            if isinstance(c, list):
                c = c[0]["text"]
            row = {"role": m["role"], "content": c, "reasoning_content": "", "tools": ""}
            calls = m.get("tool_calls")
            row["tool_calls"] = json.dumps(calls) if calls else ""
            if m["role"] == "tool":
                row["tool_call_id"] = m.get("tool_call_id", "")
            msgs.append(row)
        if r.random() < 0.3:
            head = [{"role": "user", "content": text(r)}]
            rows.append(
                {
                    "chosen": head + [{"role": "assistant", "content": text(r)}],
                    "rejected": head + [{"role": "assistant", "content": text(r, 3)}],
                }
            )
        else:
            rows.append({"conversations": msgs})
    return rows


def continue_dev(r):
    """A Continue session (`~/.continue/sessions/<id>.json`): history items
    of a message, its context items and, on an assistant's turn, one state
    per call (its output, cancelled, or none), the stored tool messages
    beside them, now and then a thinking item and a summary, from an
    OpenAI body."""
    hist = []
    msgs = openai(r)["messages"]
    i = 0
    while i < len(msgs):
        m = msgs[i]
        i += 1
        role = m["role"]
        if role in ("system", "user"):
            ctx = []
            if role == "user" and r.random() < 0.4:
                for j in range(r.randint(1, 3)):
                    c = text(r) if r.random() < 0.85 else ""
                    ctx.append(
                        {
                            "content": c,
                            "name": f"f{j}.py",
                            "description": f"src/f{j}.py",
                            "id": {"providerTitle": "file", "itemId": f"f{j}.py"},
                        }
                    )
            content = m["content"]
            if isinstance(content, list):
                content = [
                    p if p["type"] == "text" else {"type": "imageUrl", "imageUrl": p["image_url"]}
                    for p in content
                ]
            hist.append({"message": {"role": role, "content": content}, "contextItems": ctx})
        elif role == "assistant":
            if r.random() < 0.15:
                hist.append(
                    {
                        "message": {"role": "thinking", "content": text(r), "signature": "Eq1"},
                        "contextItems": [],
                    }
                )
            msg = {"role": "assistant", "content": m["content"] or ""}
            item = {"message": msg, "contextItems": []}
            calls = [
                {"id": c["id"], "type": "function", "function": c["function"]}
                for c in m.get("tool_calls", [])
            ]
            if calls:
                msg["toolCalls"] = calls
            results = []
            while i < len(msgs) and msgs[i]["role"] == "tool":
                results.append(msgs[i])
                i += 1
            states = []
            for c in calls:
                got = [t for t in results if t.get("tool_call_id") == c["id"]]
                k = r.random()
                if k < 0.08:
                    continue
                state = {"toolCallId": c["id"], "toolCall": c, "parsedArgs": {}}
                if k < 0.15:
                    state["status"] = "canceled"
                elif got and k < 0.9:
                    state["status"] = "done"
                    state["output"] = [
                        {"content": got[0]["content"], "name": "out", "description": "out"}
                    ]
                    if r.random() < 0.15:
                        state["output"].append({"content": text(r), "name": "more"})
                else:
                    state["status"] = r.choice(["done", "errored"])
                states.append(state)
            if calls or r.random() < 0.1:
                item["toolCallStates"] = states
            if r.random() < 0.015:
                item["conversationSummary"] = text(r)
            hist.append(item)
            for t in results:
                if r.random() < 0.7:
                    tm = {"role": "tool", "content": t["content"]}
                    if "tool_call_id" in t:
                        tm["toolCallId"] = t["tool_call_id"]
                    hist.append({"message": tm, "contextItems": []})
        else:
            hist.append(
                {
                    "message": {
                        "role": "tool",
                        "content": m["content"],
                        "toolCallId": m.get("tool_call_id", ""),
                    },
                    "contextItems": [],
                }
            )
    return {
        "sessionId": "9c4e1f7a",
        "title": text(r, 3),
        "workspaceDirectory": "file:///w",
        "history": hist,
        "mode": "agent",
    }


def zed(r):
    """A Zed agent thread's payload (`version` 0.3.0, with its `row`):
    `User` messages of text, mentions and images, `Agent` messages of text,
    thinking and tool uses with their `tool_results` by id (a result now
    and then missing, an error, or not text), and `Resume` markers, from an
    Anthropic body."""
    out = []
    msgs = anthropic(r)["messages"]
    for n, m in enumerate(msgs):
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if m["role"] == "user":
            if any(b["type"] == "tool_result" for b in content):
                continue  # Zed keeps results with the agent's turn
            items = []
            for b in content:
                if b["type"] == "text":
                    items.append({"Text": b["text"]})
                elif b["type"] == "image":
                    items.append({"Image": {"source": b["source"]["data"], "size": None}})
            if r.random() < 0.3:
                items.append(
                    {
                        "Mention": {
                            "uri": {"File": {"abs_path": "/w/src/a.rs"}},
                            "content": "```/w/src/a.rs\n" + text(r) + "\n```",
                        }
                    }
                )
            out.append({"User": {"id": f"u{n}", "content": items}})
            if r.random() < 0.1:
                out.append({"Resume": None})
            continue
        items = []
        if r.random() < 0.2:
            items.append({"Thinking": {"text": text(r), "signature": "EpY"}})
        if r.random() < 0.05:
            items.append({"RedactedThinking": "abc"})
        results = {}
        answers = msgs[n + 1]["content"] if n + 1 < len(msgs) else []
        answers = [b for b in answers if isinstance(b, dict) and b["type"] == "tool_result"]
        for b in content:
            if b["type"] == "text":
                items.append({"Text": b["text"]})
                continue
            items.append(
                {
                    "ToolUse": {
                        "id": b["id"],
                        "name": b["name"],
                        "raw_input": json.dumps(b["input"]),
                        "input": b["input"],
                        "is_input_complete": True,
                        "thought_signature": None,
                    }
                }
            )
            got = [a for a in answers if a["tool_use_id"] == b["id"]]
            if not got:
                continue
            c = got[0]["content"]
            c = first_text(c)
            k = r.random()
            value = {"Text": c} if k < 0.8 else (c if k < 0.9 else {"Image": {"source": PNG}})
            results[b["id"]] = {
                "tool_use_id": b["id"],
                "tool_name": b["name"],
                "is_error": bool(got[0].get("is_error")),
                "content": value,
                "output": None if r.random() < 0.7 else {"raw": c[:20]},
            }
        out.append(
            {"Agent": {"content": items, "tool_results": results, "reasoning_details": None}}
        )
    return {
        "title": text(r, 3),
        "messages": out,
        "updated_at": "2026-10-15T08:03:44.020Z",
        "detailed_summary": None,
        "model": {"provider": "anthropic", "model": "claude-haiku-4-5"},
        "profile": "write",
        "version": "0.3.0",
        "row": {
            "id": "7d9b1f3a",
            "summary": "s",
            "updated_at": "2026-10-15T08:03:44.020Z",
            "data_type": "json",
            "parent_id": None,
            "folder_paths": "/w",
            "folder_paths_order": None,
        },
    }


def amazon_q(r):
    """An Amazon Q Developer CLI conversation (`/save`'s JSON): entries of a
    user's content (a prompt, the results of the last entry's tool uses, or
    cancelled uses with a prompt) and an assistant's response or tool uses,
    hooks' context before a prompt, a valid range that may leave the first
    entries out, now and then a summary, from an OpenAI body."""
    entries = []
    pending = None  # the user's content of the next entry
    msgs = [m for m in openai(r)["messages"] if m["role"] != "system"]
    n = 0

    def user(content):
        extra = ""
        if "Prompt" in content and r.random() < 0.2:
            extra = "--- CONTEXT ENTRY BEGIN ---\n" + text(r) + "\n--- CONTEXT ENTRY END ---\n\n"
        return {"additional_context": extra, "content": content, "timestamp": None, "images": None}

    i = 0
    while i < len(msgs):
        m = msgs[i]
        i += 1
        if m["role"] == "user":
            c = first_text(m["content"])
            if pending is not None and "ToolUseResults" in pending and r.random() < 0.3:
                res = pending["ToolUseResults"]["tool_use_results"]
                pending = {"CancelledToolUses": {"prompt": c, "tool_use_results": res}}
            else:
                pending = {"Prompt": {"prompt": c}}
            continue
        if m["role"] == "tool":
            continue
        if pending is None:
            pending = {"Prompt": {"prompt": text(r)}}
        n += 1
        calls = m.get("tool_calls") or []
        if calls:
            uses = []
            for c in calls:
                a = json.loads(c["function"]["arguments"])
                uses.append(
                    {
                        "id": c["id"],
                        "name": c["function"]["name"],
                        "orig_name": c["function"]["name"],
                        "args": a,
                        "orig_args": a,
                    }
                )
            reply = {
                "ToolUse": {"message_id": f"m{n}", "content": m["content"] or "", "tool_uses": uses}
            }
        else:
            reply = {"Response": {"message_id": f"m{n}", "content": m["content"] or ""}}
        entries.append({"user": user(pending), "assistant": reply, "request_metadata": None})
        pending = None
        results = []
        while i < len(msgs) and msgs[i]["role"] == "tool":
            t = msgs[i]
            i += 1
            if "tool_call_id" not in t:
                continue
            body = (
                [{"Text": t["content"]}] if r.random() < 0.85 else [{"Json": {"out": t["content"]}}]
            )
            status = "Error" if t["content"].startswith("Error") else "Success"
            results.append({"tool_use_id": t["tool_call_id"], "content": body, "status": status})
        if calls:
            pending = {"ToolUseResults": {"tool_use_results": results}}
    start = r.choice([0, 0, 0, 1]) if len(entries) > 1 else 0
    state = {
        "conversation_id": "c1",
        "next_message": None,
        "history": entries,
        "valid_history_range": [start, len(entries)],
        "transcript": [text(r, 3)],
        "tools": {},
        "context_manager": None,
        "context_message_length": None,
        "latest_summary": None,
        "model_info": {"model_name": "claude-sonnet-4", "model_id": "claude-sonnet-4"},
    }
    if r.random() < 0.15:
        state["latest_summary"] = [text(r), None]
    if pending is not None and r.random() < 0.5:
        state["next_message"] = user(pending)
    return state


def cursor(r):
    """A Cursor agent transcript (JSONL): user and assistant lines of
    Anthropic blocks (the user's text in `<user_query>`), calls without ids
    and no results, thinking now and then, `turn_ended` lines between
    turns, from an Anthropic body."""
    lines = []
    for m in anthropic(r)["messages"]:
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if m["role"] == "user":
            texts = [b for b in content if b["type"] in ("text", "image")]
            if not texts or any(b["type"] == "tool_result" for b in content):
                continue
            if r.random() < 0.3 and lines:
                lines.append({"type": "turn_ended", "reason": "completed"})
            blocks = [
                (
                    dict(b, text="<user_query>\n" + b["text"] + "\n</user_query>")
                    if b["type"] == "text"
                    else b
                )
                for b in texts
            ]
            lines.append({"role": "user", "message": {"content": blocks}})
            continue
        blocks = []
        if r.random() < 0.2:
            blocks.append({"type": "thinking", "thinking": text(r)})
        for b in content:
            if b["type"] == "tool_use":
                b = {"type": "tool_use", "name": b["name"], "input": b["input"]}
            blocks.append(b)
        lines.append({"role": "assistant", "message": {"content": blocks}})
    return lines


def kimi_code(r):
    """A Kimi Code wire log (JSONL): a `metadata` header, config and turn
    records passed through, the user's turns as `context.append_message`,
    each step of the model as loop events (`step.begin`, a `content.part`
    or `tool.call` per piece, `step.end`) and each result as a `tool.result`
    event (an error now and then), with compactions, undos and clears
    between turns, from an OpenAI body."""
    lines = [{"type": "metadata", "protocol_version": "1.5", "created_at": 1787040000000}]
    t = [1787040000000]

    def rec(kind, **kw):
        t[0] += 137
        lines.append(dict(type=kind, **kw, time=t[0]))

    def loop(ev):
        rec("context.append_loop_event", event=ev)

    rec("config.update", cwd="/w", profileName="agent", systemPrompt=text(r))
    step = 0
    users = 0
    for m in openai(r)["messages"]:
        role = m["role"]
        if role == "system":
            continue
        if role == "user":
            if users and r.random() < 0.15:
                k = r.random()
                if k < 0.5:
                    rec(
                        "context.apply_compaction",
                        summary=text(r),
                        compactedCount=3,
                        keptUserMessageCount=users,
                    )
                elif k < 0.8:
                    rec("context.undo", count=r.randint(1, 2))
                else:
                    rec("context.clear")
            users += 1
            c = m["content"]
            parts = (
                [{"type": "text", "text": c}]
                if isinstance(c, str)
                else [
                    p if p["type"] == "text" else {"type": "image_url", "imageUrl": p["image_url"]}
                    for p in c
                ]
            )
            rec("turn.prompt", input=parts, origin={"kind": "user"})
            rec(
                "context.append_message",
                message={
                    "role": "user",
                    "content": parts,
                    "toolCalls": [],
                    "origin": {"kind": "user"},
                },
            )
            continue
        if role == "tool":
            result = {"output": m["content"]}
            if m["content"].startswith("Error"):
                result["isError"] = True
            loop({"type": "tool.result", "toolCallId": m.get("tool_call_id", ""), "result": result})
            continue
        step += 1
        sid = f"st-{step}"
        loop({"type": "step.begin", "uuid": sid, "turnId": "tn", "step": step})
        pieces = []
        if r.random() < 0.2:
            pieces.append({"type": "content.part", "part": {"type": "think", "think": text(r)}})
        if m["content"]:
            pieces.append({"type": "content.part", "part": {"type": "text", "text": m["content"]}})
        for c in m.get("tool_calls") or []:
            pieces.append(
                {
                    "type": "tool.call",
                    "toolCallId": c["id"],
                    "name": c["function"]["name"],
                    "args": json.loads(c["function"]["arguments"]),
                }
            )
        for j, p in enumerate(pieces):
            loop(dict(p, uuid=f"{sid}-{j}", turnId="tn", step=step, stepUuid=sid))
        loop(
            {"type": "step.end", "uuid": sid, "turnId": "tn", "step": step, "finishReason": "stop"}
        )
    rec("turn.ended", turnId="tn", reason="done")
    return lines


def openhands(r):
    """An OpenHands trajectory (a JSON list of events): the system action,
    user and agent `message` actions, one action per call with its
    `tool_call_metadata` (the model's response holding every call of its
    turn), an observation answering each (now and then missing, or not a
    string), and events that are not the conversation (agent state
    changes, recalls) between, from an OpenAI body."""
    events = []

    def ev(**kw):
        kw = dict(id=len(events), timestamp="2025-01-27T22:44:56", **kw)
        events.append(kw)
        return kw["id"]

    for m in openai(r)["messages"]:
        role = m["role"]
        if role == "system":
            ev(
                source="agent",
                message=m["content"],
                action="system",
                args={"content": m["content"]},
            )
        elif role == "user":
            c = first_text(m["content"])
            urls = None if isinstance(m["content"], str) else ["data:image/png;base64," + PNG]
            ev(source="user", message=c, action="message", args={"content": c, "image_urls": urls})
            if r.random() < 0.3:
                ev(
                    source="environment",
                    message="",
                    observation="agent_state_changed",
                    content="",
                    extras={"agent_state": "running"},
                )
        elif role == "assistant":
            calls = m.get("tool_calls") or []
            if not calls:
                ev(
                    source="agent",
                    message=m["content"],
                    action="message",
                    args={"content": m["content"], "image_urls": None},
                )
                continue
            response = {
                "id": "chatcmpl-1",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "content": m["content"],
                            "role": "assistant",
                            "tool_calls": calls,
                        },
                    }
                ],
            }
            for j, c in enumerate(calls):
                a = json.loads(c["function"]["arguments"])
                meta = {
                    "function_name": c["function"]["name"],
                    "tool_call_id": c["id"],
                    "model_response": response,
                    "total_calls_in_response": len(calls),
                }
                thought = (m["content"] or "") if j == 0 else ""
                ev(
                    source="agent",
                    message="",
                    action=r.choice(["run", "read", "edit"]),
                    tool_call_metadata=meta,
                    args=dict(a, thought=thought),
                )
        else:
            cid = m.get("tool_call_id")
            meta = {"function_name": "bash", "tool_call_id": cid} if cid else None
            content = m["content"] if r.random() < 0.9 else {"out": m["content"]}
            e = dict(
                source="agent",
                message="ran",
                observation="run",
                content=content,
                extras={"command": "x", "exit_code": 0},
            )
            if meta:
                e["tool_call_metadata"] = meta
            ev(**e)
    return events


def letta(r):
    """A Letta agent file (`.af`), of either generation: OpenAI-shaped
    messages with ids (a tool's message keeping its `tool_returns`), and
    the messages in context by index or by id, some evicted, from an
    OpenAI body."""
    msgs = []
    for n, m in enumerate(openai(r)["messages"]):
        c = m["content"]
        parts = (
            [{"type": "text", "text": c}]
            if isinstance(c, str)
            else ([] if c is None else [p for p in c if p["type"] == "text"])
        )
        out = {
            "type": "message",
            "role": m["role"],
            "content": parts,
            "id": f"message-{n}",
            "tool_calls": m.get("tool_calls"),
            "tool_call_id": m.get("tool_call_id"),
            "tool_returns": [],
            "created_at": "2026-01-22T02:06:34",
        }
        if m["role"] == "tool" and r.random() < 0.7:
            out["tool_returns"] = [
                {"tool_call_id": m.get("tool_call_id"), "status": "success", "func_response": c}
            ]
        msgs.append(out)
    # Evicted messages: the first few past the system prompt, now and then.
    start = 1 if r.random() < 0.2 and len(msgs) > 3 else 0
    live = [0] + list(range(start + 1, len(msgs))) if start else list(range(len(msgs)))
    if r.random() < 0.5:
        return {
            "agent_type": "memgpt_agent",
            "name": "a",
            "in_context_message_indices": live,
            "messages": msgs,
            "tools": [],
            "tool_rules": [],
            "version": "0.6.47",
        }
    agent = {
        "name": "a",
        "id": "agent-0",
        "in_context_message_ids": [msgs[i]["id"] for i in live],
        "messages": msgs,
    }
    return {"agents": [agent], "groups": [], "blocks": [], "tools": [], "metadata": {}}


def copilot_chat(r):
    """A VS Code Copilot Chat session (`version` 3): requests of the user's
    text, each answered by its `response` items and, in agent mode, tool
    call rounds with their results by id (a result now and then missing),
    from an OpenAI body."""
    requests = []
    msgs = [m for m in openai(r)["messages"] if m["role"] != "system"]
    i = 0
    while i < len(msgs):
        m = msgs[i]
        i += 1
        if m["role"] != "user":
            continue
        c = first_text(m["content"])
        rounds, results, shown = [], {}, []
        while i < len(msgs) and msgs[i]["role"] != "user":
            a = msgs[i]
            i += 1
            if a["role"] == "tool":
                if "tool_call_id" in a and a["tool_call_id"] not in results:
                    results[a["tool_call_id"]] = {
                        "$mid": 20,
                        "content": [{"$mid": 21, "value": a["content"]}],
                    }
                continue
            calls = [
                {
                    "name": t["function"]["name"],
                    "arguments": t["function"]["arguments"],
                    "id": t["id"],
                }
                for t in a.get("tool_calls") or []
            ]
            rounds.append({"response": a["content"] or "", "toolCalls": calls, "id": f"r{i}"})
            if a["content"]:
                shown.append({"value": a["content"], "supportHtml": False})
            for t in calls:
                shown.append(
                    {
                        "kind": "toolInvocationSerialized",
                        "invocationMessage": {"value": "Running " + t["name"]},
                        "isComplete": True,
                        "toolCallId": t["id"],
                        "toolId": t["name"],
                    }
                )
        agent = bool(rounds) and (any(q["toolCalls"] for q in rounds) or r.random() < 0.5)
        meta = {"codeBlocks": []}
        if agent:
            meta["toolCallRounds"] = rounds
            meta["toolCallResults"] = results
        requests.append(
            {
                "requestId": f"request_{len(requests)}",
                "message": {"parts": [{"text": c, "kind": "text"}], "text": c},
                "variableData": {"variables": []},
                "response": shown if agent else [q for q in shown if "value" in q],
                "result": {"timings": {"totalElapsed": 10}, "metadata": meta},
                "isCanceled": r.random() < 0.05,
                "timestamp": 1761902400123,
                "modelId": "copilot/claude-sonnet-4.5",
            }
        )
    return {
        "version": 3,
        "requesterUsername": "dev",
        "responderUsername": "GitHub Copilot",
        "initialLocation": "panel",
        "requests": requests,
        "sessionId": "s1",
        "creationDate": 1761902390511,
    }


def agents_sdk(r):
    """An OpenAI Agents SDK run state (`RunState.to_json()`): the original
    input (the user's text, or Responses items), the run's generated items
    around Responses items (messages, calls, their outputs, reasoning), and
    now and then an approval item repeating a call, from a Responses
    body."""
    items = responses(r)["input"]
    cut = 1 if r.random() < 0.5 else r.randint(1, len(items))
    first = items[:cut]
    if cut == 1 and r.random() < 0.5:
        original = first[0]["content"][0]["text"]
    else:
        original = first
    kinds = {
        "message": "message_output_item",
        "function_call": "tool_call_item",
        "function_call_output": "tool_call_output_item",
    }
    generated = []
    for it in items[cut:]:
        if it["type"] == "message" and it["role"] == "user":
            generated.append(
                {"agent": {"name": "a"}, "raw_item": it, "type": "message_output_item"}
            )
            continue
        if r.random() < 0.1:
            generated.append(
                {
                    "agent": {"name": "a"},
                    "raw_item": {
                        "type": "reasoning",
                        "id": "rs",
                        "summary": [{"type": "summary_text", "text": text(r)}],
                    },
                    "type": "reasoning_item",
                }
            )
        row = {"agent": {"name": "a"}, "raw_item": it, "type": kinds[it["type"]]}
        if it["type"] == "function_call_output":
            row["output"] = it["output"]
        generated.append(row)
        if it["type"] == "function_call" and r.random() < 0.05:
            generated.append({"agent": {"name": "a"}, "raw_item": it, "type": "tool_approval_item"})
    return {
        "$schemaVersion": "1.13",
        "context": {"usage": {"requests": 0}},
        "current_agent": {"name": "a"},
        "current_turn": 1,
        "generated_items": generated,
        "generated_session_item_indexes": list(range(len(generated))),
        "max_turns": 10,
        "model_responses": [],
        "original_input": original,
        "trace": None,
    }


def grok_build(r):
    """A Grok Build session (`chat_history.jsonl`): system, user (some
    added by the agent), assistant lines with `tool_calls`, `tool_result`
    lines by id (in any order), and reasoning lines, from an OpenAI
    body."""
    lines = []
    for m in openai(r)["messages"]:
        role = m["role"]
        if role == "system":
            lines.append({"type": "system", "content": m["content"]})
        elif role == "user":
            c = m["content"]
            if not isinstance(c, str):
                c = [p for p in c if p["type"] == "text"]
            lines.append({"type": "user", "content": c})
            if r.random() < 0.1:
                lines.append(
                    {
                        "type": "user",
                        "content": [
                            {"type": "text", "text": "<reminder>" + text(r) + "</reminder>"}
                        ],
                        "synthetic_reason": "reminder",
                    }
                )
        elif role == "assistant":
            if r.random() < 0.2:
                lines.append(
                    {
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": text(r)}],
                        "encrypted_content": "gAAAAB" + "x" * r.randint(0, 40),
                        "status": "completed",
                    }
                )
            line = {"type": "assistant", "content": m["content"] or "", "model_id": "grok-4"}
            calls = [
                {
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "arguments": c["function"]["arguments"],
                }
                for c in m.get("tool_calls") or []
            ]
            if calls:
                line["tool_calls"] = calls
            lines.append(line)
        else:
            lines.append(
                {
                    "type": "tool_result",
                    "tool_call_id": m.get("tool_call_id", ""),
                    "content": m["content"],
                }
            )
    return lines


def claude_ai(r):
    """A Claude.ai export (`conversations.json`): conversations of
    `chat_messages`, each with its `sender`, its `text` and its content
    blocks (timestamped; thinking, tool uses and results among them), now
    and then a message with its text only, or a text out of step with its
    blocks, from Anthropic bodies."""
    convs = []
    for c in range(r.randint(1, 3)):
        msgs = []
        for n, m in enumerate(anthropic(r)["messages"]):
            content = m["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            blocks = []
            if m["role"] == "assistant" and r.random() < 0.2:
                blocks.append(
                    {"type": "thinking", "thinking": text(r), "summaries": [], "cut_off": False}
                )
            for b in content:
                if b["type"] == "image":
                    continue
                blocks.append(dict(b, start_timestamp="2025-01-01T00:00:05Z"))
            joined = "\n".join(b["text"] for b in blocks if b["type"] == "text")
            rec = {
                "uuid": f"c{c}-m{n}",
                "sender": "assistant" if m["role"] == "assistant" else "human",
                "created_at": "2025-01-01T00:00:05Z",
                "text": joined,
                "content": blocks,
                "attachments": [],
                "files": [],
            }
            k = r.random()
            if k < 0.1 and all(b["type"] == "text" for b in blocks):
                rec["content"] = []
            elif k < 0.15:
                rec["text"] = text(r, 3)
            msgs.append(rec)
        convs.append(
            {
                "uuid": f"c{c}",
                "name": text(r, 3),
                "created_at": "2025-01-01T00:00:00Z",
                "chat_messages": msgs,
            }
        )
    return convs


def amp(r):
    """An Amp thread (`threads/T-*.json`): Anthropic messages in Amp's
    envelope, each tool result `{toolUseID, run: {status, result |
    progress}}` (the result a string or an object), from an Anthropic
    body."""
    msgs = []
    for m in anthropic(r)["messages"]:
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks = []
        for b in content:
            if b["type"] == "tool_result":
                c = b["content"] if isinstance(b["content"], str) else b["content"][0]["text"]
                k = r.random()
                if k < 0.4:
                    run = {"status": "done", "result": c}
                elif k < 0.8:
                    run = {"status": "done", "result": {"output": c, "exitCode": r.choice([0, 1])}}
                elif k < 0.9:
                    run = {"status": "in-progress", "progress": {"output": c}}
                else:
                    run = {"status": "error", "error": {"message": c}}
                blocks.append({"type": "tool_result", "toolUseID": b["tool_use_id"], "run": run})
            else:
                blocks.append(b)
        out = {"role": m["role"], "content": blocks}
        if m["role"] == "user":
            out["meta"] = {"sentAt": 1700000001000}
        msgs.append(out)
    return {
        "v": 3,
        "id": "T-aaaaaaaa-aaaa",
        "created": 1700000000000,
        "title": text(r, 3),
        "env": {},
        "messages": msgs,
    }


GEN.update(
    {
        "claude-code": claude_code,
        "cline": cline,
        "bedrock": bedrock,
        "langchain": langchain,
        "codex": codex,
        "pi": pi,
        "open-webui": open_webui,
        "chatgpt": chatgpt,
        "librechat": librechat,
        "gemini-cli": gemini_cli,
        "qwen-code": qwen_code,
        "droid": droid,
        "opencode": opencode,
        "goose": goose,
        "copilot": copilot,
        "crush": crush,
        "grok-cli": grok_cli,
        "sharegpt": sharegpt,
        "hf-chat": hf_chat,
        "continue": continue_dev,
        "zed": zed,
        "amazon-q": amazon_q,
        "cursor": cursor,
        "kimi-code": kimi_code,
        "openhands": openhands,
        "letta": letta,
        "copilot-chat": copilot_chat,
        "agents-sdk": agents_sdk,
        "grok-build": grok_build,
        "claude-ai": claude_ai,
        "amp": amp,
    }
)
JSONL = (
    "grok-build",
    "cursor",
    "kimi-code",
    "claude-code",
    "codex",
    "pi",
    "qwen-code",
    "droid",
    "copilot",
    "sharegpt",
    "hf-chat",
)
S = 1


def write(out, seed, fmt, scale=1):
    """Writes the transcript of FORMAT for SEED to OUT (JSONL for
    the agents' logs, JSON otherwise)."""
    global S
    S = scale
    r = random.Random(seed)
    v = GEN[fmt](r)
    asc = r.random() < 0.5
    with open(out, "w", encoding="utf-8") as f:
        if fmt in JSONL:
            f.write("".join(json.dumps(line, ensure_ascii=asc) + "\n" for line in v))
        else:
            json.dump(v, f, ensure_ascii=asc)


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:  # the formats, one a line
        print("\n".join(sorted(GEN)))
        sys.exit(0)
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("seed", type=int)
    ap.add_argument("format", choices=sorted(GEN))
    ap.add_argument("--scale", type=int, default=1)
    a = ap.parse_args()
    write(a.out, a.seed, a.format, a.scale)
