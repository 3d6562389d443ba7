--[[
job_submit.lua - the memplan check of Slurm's job_submit/lua plugin
(slurm-wlm-basic-plugins, Slurm 22.05, Lua 5.1).

At submission a job that names its graph (--comment=memplan:<hash>, or
MEMPLAN_GRAPH=<hash> in a batch job's environment) is asked about with one
POST /v1/fit carrying every partition of memplan_slurm.conf (next to this
file): its usable bytes, or its GPU's name in the daemon's catalogue. A job
that fits is given its plan (POST /v1/plans at the budget of its
partition): its id, and the budget and solver that name it, reach the
job in MEMPLAN_* variables (batch jobs) and its comment. A job that fits none of its partitions is rejected naming its
least feasible budget, or, with route = true, moved to the smallest
partition that fits. A daemon that is slow, unreachable or failing costs at
most `timeout` seconds per request: the job is then let through with a note
(on_error = "let_through", the default) or held (on_error = "hold").
docs/schedulers.md is the manual.

slurmctld calls this under its job write lock: every wait here stalls it,
hence curl with --max-time, and nothing else that can block.
--]]

local MP = {}

---------------------------------------------------------------- JSON

-- A small JSON reader for the daemon's answers: objects, arrays, strings
-- (\uXXXX below 0x80 kept, others as '?'), numbers (Lua doubles: byte
-- counts are exact up to 2^53), true, false, null (nil). Returns the value,
-- or nil and a message.
local function json_decode(s)
  local pos = 1
  local function ws() pos = s:find("[^ \t\r\n]", pos) or (#s + 1) end
  local value
  local function str()
    local out, i = {}, pos + 1
    while true do
      local c = s:sub(i, i)
      if c == "" then error("unterminated string") end
      if c == '"' then pos = i + 1; return table.concat(out) end
      if c == "\\" then
        local e = s:sub(i + 1, i + 1)
        local map = { b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\", ["/"] = "/" }
        if map[e] then out[#out + 1] = map[e]; i = i + 2
        elseif e == "u" then
          local code = tonumber(s:sub(i + 2, i + 5), 16)
          if not code then error("bad \\u escape") end
          out[#out + 1] = code < 128 and string.char(code) or "?"
          i = i + 6
        else error("bad escape") end
      else
        out[#out + 1] = c; i = i + 1
      end
    end
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1; return t end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then error("object key expected") end
        local k = str(); ws()
        if s:sub(pos, pos) ~= ":" then error("':' expected") end
        pos = pos + 1
        t[k] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "}" then return t end
        if d ~= "," then error("',' or '}' expected") end
      end
    elseif c == "[" then
      local t, n = {}, 0
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1; return t end
      while true do
        n = n + 1; t[n] = value(); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "]" then return t end
        if d ~= "," then error("',' or ']' expected") end
      end
    elseif c == '"' then return str()
    elseif s:sub(pos, pos + 3) == "true" then pos = pos + 4; return true
    elseif s:sub(pos, pos + 4) == "false" then pos = pos + 5; return false
    elseif s:sub(pos, pos + 3) == "null" then pos = pos + 4; return nil
    else
      local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not num or num == "" or not tonumber(num) then error("value expected at " .. pos) end
      pos = pos + #num
      return tonumber(num)
    end
  end
  local ok, v = pcall(function()
    local r = value(); ws()
    if pos <= #s then error("trailing characters") end
    return r
  end)
  if not ok then return nil, tostring(v) end
  return v
end
MP.json_decode = json_decode

---------------------------------------------------------------- sizes

local UNITS = { [""] = 1, B = 1, K = 1e3, M = 1e6, G = 1e9, T = 1e12,
                Ki = 1024, Mi = 1024 ^ 2, Gi = 1024 ^ 3, Ti = 1024 ^ 4 }

-- Bytes from a number or a string such as "40Gi", "37.5 GiB", "40G",
-- "4e10": a whole positive number of bytes, else nil.
local function parse_bytes(v)
  if type(v) == "number" then
    return (v >= 1 and v == math.floor(v)) and v or nil
  end
  if type(v) ~= "string" then return nil end
  local num, unit = v:match("^%s*([%d%.eE+]+)%s*(%a*)%s*$")
  if not num or not tonumber(num) then return nil end
  unit = unit:gsub("B$", "")
  if unit == "" and v:match("B%s*$") then unit = "B" end
  local mul = UNITS[unit]
  if not mul then return nil end
  local b = tonumber(num) * mul
  if b < 1 or b ~= math.floor(b) then return nil end
  return b
end
MP.parse_bytes = parse_bytes

local function fmt_int(n) return string.format("%.0f", n) end

-- "969269792 bytes (924.4 MiB)"
local function human(n)
  local units, v, i = { "bytes", "KiB", "MiB", "GiB", "TiB" }, n, 1
  while v >= 1024 and i < #units do v = v / 1024; i = i + 1 end
  if i == 1 then return fmt_int(n) .. " bytes" end
  return string.format("%s bytes (%.1f %s)", fmt_int(n), v, units[i])
end

---------------------------------------------------------------- config

local function script_dir()
  local src = debug.getinfo(1, "S").source or ""
  return src:match("^@(.*)/[^/]*$") or "."
end

-- The configuration: memplan_slurm.conf next to this script (Lua table
-- syntax, read in an empty environment), read again at every submission
-- so that an edit takes effect at once. Returns the table or nil, message.
local function load_config()
  local path = script_dir() .. "/memplan_slurm.conf"
  local chunk, err = loadfile(path)
  if not chunk then return nil, "cannot read " .. path .. ": " .. tostring(err) end
  local env = {}
  setfenv(chunk, env)
  local ok, e = pcall(chunk)
  if not ok then return nil, path .. ": " .. tostring(e) end
  local c = {
    url = env.url or "http://127.0.0.1:8080",
    timeout = tonumber(env.timeout) or 2,
    on_error = env.on_error or "let_through",
    route = env.route == true,
    solver = env.solver or "auto",
    swap = env.swap == true,
    auth_header_file = env.auth_header_file,
    curl = env.curl or "curl",
    job_url = env.job_url or env.url or "http://127.0.0.1:8080",
    partitions = {},
  }
  if c.on_error ~= "let_through" and c.on_error ~= "hold" then
    return nil, path .. ": on_error must be \"let_through\" or \"hold\""
  end
  if not c.solver:match("^[a-z]+$") then return nil, path .. ": solver must be a solver's name" end
  if not (c.timeout > 0 and c.timeout <= 30) then return nil, path .. ": timeout must be in (0, 30] seconds" end
  for _, key in ipairs({ "url", "job_url", "curl", "auth_header_file" }) do
    if c[key] ~= nil and (type(c[key]) ~= "string" or c[key]:find("'", 1, true)) then
      return nil, path .. ": " .. key .. " must be a string without a quote"
    end
  end
  for name, p in pairs(env.partitions or {}) do
    if type(p) ~= "table" then return nil, path .. ": partitions." .. tostring(name) .. " must be a table" end
    local usable = p.usable ~= nil and parse_bytes(p.usable)
    if p.usable ~= nil and not usable then
      return nil, path .. ": partitions." .. tostring(name) .. ".usable must be a size (bytes, \"40Gi\", ...)"
    end
    local gpu = p.gpu
    if not usable and not (type(gpu) == "string" and gpu:match("^[%w%._-]+$")) then
      return nil, path .. ": partitions." .. tostring(name) .. " needs usable bytes, or gpu naming a GPU of the daemon's catalogue"
    end
    c.partitions[name] = { name = name, gpu = tostring(gpu or "?"), usable = usable or nil }
  end
  return c
end

---------------------------------------------------------------- HTTP

local function shell_quote(s) return "'" .. s .. "'" end

-- POST body (a JSON text made here, from checked values only) to path.
-- Returns status (number; 0 when no answer came), the body's text, and for
-- status 0 a short reason.
local function post(cfg, path, body)
  local cmd = { "exec", shell_quote(cfg.curl), "-q", "-sS", "--connect-timeout", tostring(cfg.timeout),
                "--max-time", tostring(cfg.timeout), "-X", "POST",
                "-H", "'Content-Type: application/json'" }
  if cfg.auth_header_file then cmd[#cmd + 1] = "-H " .. shell_quote("@" .. cfg.auth_header_file) end
  cmd[#cmd + 1] = "--data-binary " .. shell_quote(body)
  cmd[#cmd + 1] = "-w '\\n%{http_code} %{exitcode}'"
  cmd[#cmd + 1] = shell_quote(cfg.url:gsub("/+$", "") .. path)
  cmd[#cmd + 1] = "2>/dev/null"
  local f = io.popen(table.concat(cmd, " "), "r")
  if not f then return 0, nil, "cannot run curl" end
  local out = f:read("*a") or ""
  f:close()
  local text, code, exit = out:match("^(.*)\n(%d%d%d) (%d+)%s*$")
  if not code then return 0, nil, "curl gave no answer (is " .. cfg.curl .. " installed?)" end
  code, exit = tonumber(code), tonumber(exit)
  if code == 0 then
    if exit == 28 then return 0, nil, "no answer within " .. cfg.timeout .. " s" end
    if exit == 7 then return 0, nil, "connection refused" end
    return 0, nil, "curl failed (exit " .. exit .. ")"
  end
  return code, text
end

---------------------------------------------------------------- the check

-- The graph a job names, or nil: "memplan:<hash>" at the start of its
-- comment or as a word of it, else MEMPLAN_GRAPH in a batch job's
-- environment. The second value is set when it names one badly.
local function job_graph(job_desc)
  local comment = job_desc.comment
  if comment then
    local h = comment:match("^memplan:(%S*)") or comment:match("%smemplan:(%S*)")
    if h then
      if h:match("^[0-9a-f]+$") and #h == 64 then return h end
      return nil, "the comment's memplan:<hash> needs the graph's 64 hex digits"
    end
  end
  if job_desc.script and job_desc.environment then
    local h = job_desc.environment.MEMPLAN_GRAPH
    if h and h ~= "" then
      if h:match("^[0-9a-f]+$") and #h == 64 then return h end
      return nil, "MEMPLAN_GRAPH needs the graph's 64 hex digits"
    end
  end
  return nil
end

-- The partitions a job asked for (its list, else the default partition).
local function job_partitions(job_desc, part_list)
  local names = {}
  if job_desc.partition and job_desc.partition ~= "" then
    for n in job_desc.partition:gmatch("[^,]+") do names[#names + 1] = n end
  else
    for _, p in pairs(part_list or {}) do
      if p.flag_default == 1 then names[#names + 1] = p.name end
    end
  end
  return names
end

-- Writes the memplan words of the comment: memplan:<hash> followed by
-- what the check found, the rest of the user's comment kept.
local function set_comment(job_desc, hash, words)
  local c = { "memplan:" .. hash, words }
  for w in (job_desc.comment or ""):gmatch("%S+") do
    if not (w:match("^memplan:") or w:match("^plan:%x+$") or w:match("^budget:%d+$") or w:match("^unchecked:")) then
      c[#c + 1] = w
    end
  end
  job_desc.comment = table.concat(c, " ")
end

local function set_env(job_desc, name, value)
  if job_desc.script and job_desc.environment then job_desc.environment[name] = value end
end

-- The daemon could not answer: let the job through with a note, or hold it.
-- A problem of the set-up rather than of the daemon (no configuration, a
-- partition without a GPU) always lets the job through: `always_let`.
local function not_checked(cfg, job_desc, hash, reason, always_let)
  local word = reason:gsub("[^%w]+", "_"):gsub("^_+", ""):sub(1, 60):gsub("_+$", "")
  set_comment(job_desc, hash, "unchecked:" .. word)
  set_env(job_desc, "MEMPLAN_GRAPH", hash)
  set_env(job_desc, "MEMPLAN_UNCHECKED", reason)
  if cfg and cfg.on_error == "hold" and not always_let then
    job_desc.priority = 0
    slurm.log_info("memplan: job of graph %s held: %s", hash, reason)
    slurm.user_msg("memplan: the job is held (" .. reason .. "); an administrator releases it with scontrol release")
  else
    slurm.log_info("memplan: job of graph %s let through unchecked: %s", hash, reason)
    slurm.user_msg("memplan: the job was not checked (" .. reason .. "); it runs without a plan from the scheduler")
  end
  return slurm.SUCCESS
end

local function error_text(answer)
  local e = type(answer) == "table" and answer.error
  if type(e) == "table" then return tostring(e.code) .. ": " .. tostring(e.message) end
  return "no JSON error body"
end

-- One POST /v1/fit for every configured budget and catalogue GPU, always the
-- same request: one cached fit per graph whatever partition a job asks
-- for. On an answer, each partition of cfg gets .bytes (its usable bytes)
-- and .fit, and it returns true and the least feasible budget (nil when
-- unknown). Else "unknown_graph", or false, the reason, and whether it is a
-- set-up problem (the daemon refused what this configuration asked).
local function ask_fit(cfg, hash)
  local budgets, devices, seen = {}, {}, {}
  for _, p in pairs(cfg.partitions) do
    local key = p.usable or p.gpu
    if not seen[key] then
      seen[key] = true
      if p.usable then budgets[#budgets + 1] = p.usable else devices[#devices + 1] = p.gpu end
    end
  end
  table.sort(budgets)
  table.sort(devices)
  if #budgets + #devices == 0 then return false, nil, "memplan_slurm.conf names no partition", true end

  -- the daemon answers 202 (still computing) before curl would give up
  local fields = { '"graph_hash":"' .. hash .. '"', '"solver":"' .. cfg.solver .. '"',
                   '"wait":' .. string.format("%.1f", math.max(cfg.timeout - 0.5, 0)) }
  if cfg.swap then fields[#fields + 1] = '"swap":true' end
  if #budgets > 0 then
    local parts = {}
    for i, b in ipairs(budgets) do parts[i] = fmt_int(b) end
    fields[#fields + 1] = '"budgets":[' .. table.concat(parts, ",") .. "]"
  end
  if #devices > 0 then fields[#fields + 1] = '"devices":["' .. table.concat(devices, '","') .. '"]' end
  local status, text, why = post(cfg, "/v1/fit", "{" .. table.concat(fields, ",") .. "}")
  if status == 0 then return false, nil, why end
  local answer = json_decode(text)
  if status == 404 and type(answer) == "table" and type(answer.error) == "table"
     and answer.error.code == "unknown_graph" then
    return "unknown_graph"
  end
  if status == 202 then
    -- the daemon goes on with it and keeps it: the graph's next job is answered at once
    return false, nil, "the fit is still being computed"
  end
  if status ~= 200 or type(answer) ~= "table" then
    -- a 400 is a request this configuration made (an unknown GPU name, ...)
    return false, nil, "the fit answered " .. status .. " (" .. error_text(answer) .. ")", status == 400
  end

  local by_budget, by_device, least = {}, {}, nil
  local function note(e)
    local m = e.min_feasible_budget or e.min_budget
    if e.fits == false and m and (not least or m > least) then least = m end
  end
  for _, e in ipairs(type(answer.budgets) == "table" and answer.budgets or {}) do
    if type(e) == "table" and e.budget then by_budget[e.budget] = e; note(e) end
  end
  for _, e in ipairs(type(answer.devices) == "table" and answer.devices or {}) do
    if type(e) == "table" and e.name and e.usable_bytes then by_device[e.name] = e; note(e) end
  end
  for _, p in pairs(cfg.partitions) do
    local e
    if p.usable then e = by_budget[p.usable] else e = by_device[p.gpu] end
    if not e then return false, nil, "the fit did not answer for partition " .. p.name, true end
    p.bytes, p.fit = p.usable or e.usable_bytes, e.fits == true
  end
  return true, least
end

function MP.check(job_desc, part_list)
  local hash, bad = job_graph(job_desc)
  if bad then
    slurm.user_msg("memplan: " .. bad)
    return slurm.ERROR
  end
  if not hash then return slurm.SUCCESS end

  local cfg, cerr = load_config()
  if not cfg then
    slurm.log_error("memplan: %s", cerr)
    return not_checked(nil, job_desc, hash, "the plugin's configuration is unreadable", true)
  end

  local asked = job_partitions(job_desc, part_list)
  local known = 0
  for _, n in ipairs(asked) do if cfg.partitions[n] then known = known + 1 end end
  if known == 0 then
    return not_checked(cfg, job_desc, hash, "no partition of the job has a GPU in memplan_slurm.conf", true)
  end

  local ok, least, why, setup = ask_fit(cfg, hash)
  if ok == "unknown_graph" then
    slurm.user_msg("memplan: the daemon holds no graph " .. hash ..
                   "; send the graph first (POST /v1/plans or /v1/fit with the graph itself)")
    return slurm.ERROR
  end
  if not ok then return not_checked(cfg, job_desc, hash, why, setup) end
  local function fits(p) return p.fit end

  -- the asked partitions that fit (unconfigured ones are kept as they are)
  local keep, plan_budget, failed = {}, nil, {}
  for _, n in ipairs(asked) do
    local p = cfg.partitions[n]
    if not p then keep[#keep + 1] = n
    elseif fits(p) then
      keep[#keep + 1] = n
      if not plan_budget or p.bytes < plan_budget then plan_budget = p.bytes end
    else failed[#failed + 1] = p end
  end

  if not plan_budget then
    -- nothing it asked for fits: the smallest partition that does
    local best
    for _, p in pairs(cfg.partitions) do
      if fits(p) and (not best or p.bytes < best.bytes or (p.bytes == best.bytes and p.name < best.name)) then
        best = p
      end
    end
    local need = least and ("its least feasible budget is " .. human(least)) or "it fits no configured budget"
    local what = {}
    for _, p in ipairs(failed) do
      what[#what + 1] = string.format("partition %s (%s, %s usable)", p.name, p.gpu, human(p.bytes))
    end
    local msg = "memplan: graph " .. hash:sub(1, 12) .. " does not fit " .. table.concat(what, ", ") ..
                ": " .. need
    if best and cfg.route then
      slurm.user_msg(msg .. "; routed to partition " .. best.name .. " (" .. best.gpu .. ", " ..
                     human(best.bytes) .. " usable)")
      slurm.log_info("memplan: graph %s routed to partition %s", hash, best.name)
      keep, plan_budget = { best.name }, best.bytes
    else
      if best then msg = msg .. "; it fits partition " .. best.name .. " (" .. human(best.bytes) .. " usable)" end
      slurm.log_info("memplan: job of graph %s rejected: %s", hash, msg)
      slurm.user_msg(msg)
      return slurm.ERROR
    end
  end
  if table.concat(keep, ",") ~= table.concat(asked, ",") then job_desc.partition = table.concat(keep, ",") end

  -- the plan at the smallest budget it may run under (it fits every larger
  -- one): 202 with its id while it is computed, or 200 with the finished
  -- plan from the cache, its id first (the answer is not decoded here: its
  -- schedule can be megabytes). Either way the id is this submission's own,
  -- a plan of the plugin's principal that the job reads.
  local solver_fields = string.format('"solver":"%s"%s', cfg.solver, cfg.swap and ',"swap":true' or "")
  local pstatus, ptext, pwhy = post(cfg, "/v1/plans", string.format('{"graph_hash":"%s","budget":%s,%s}', hash,
                                                                    fmt_int(plan_budget), solver_fields))
  local plan_id
  if pstatus == 202 then
    local view = json_decode(ptext)
    plan_id = type(view) == "table" and type(view.id) == "string" and view.id
  elseif pstatus == 200 then
    plan_id = ptext:sub(1, 64):match('^%s*{%s*"id"%s*:%s*"(%x+)"')
  end
  if plan_id and not plan_id:match("^" .. string.rep("%x", 32) .. "$") then plan_id = nil end
  if not ((pstatus == 202 and plan_id) or (pstatus == 200 and ptext:find('"feasible":true', 1, true))) then
    return not_checked(cfg, job_desc, hash,
                       pwhy or ("the plan answered " .. pstatus .. " (" .. error_text(json_decode(ptext)) .. ")"))
  end
  local budget = fmt_int(plan_budget)
  set_comment(job_desc, hash, "budget:" .. budget .. (plan_id and (" plan:" .. plan_id) or ""))
  set_env(job_desc, "MEMPLAN_GRAPH", hash)
  set_env(job_desc, "MEMPLAN_BUDGET", budget)
  set_env(job_desc, "MEMPLAN_SOLVER", cfg.solver)
  if cfg.swap then set_env(job_desc, "MEMPLAN_SWAP", "1") end
  if plan_id then set_env(job_desc, "MEMPLAN_PLAN_ID", plan_id) end
  set_env(job_desc, "MEMPLAN_URL", cfg.job_url)
  slurm.log_info("memplan: graph %s fits at budget %s (plan %s)", hash, budget, plan_id or "without an id")
  return slurm.SUCCESS
end

-- A pending job moved to other partitions (scontrol update ... partition=):
-- its plan was made for the budget in its comment, so each configured
-- partition it moves to must offer at least that many bytes; a plan that
-- fits a budget fits every larger one. Jobs without a plan move freely, and
-- when the daemon must be asked (a catalogue GPU) and does not answer, the
-- move is let through.
function MP.modify(job_desc, job_rec)
  if not job_desc.partition or job_desc.partition == "" then return slurm.SUCCESS end
  local comment = job_rec.comment or ""
  local hash = comment:match("^memplan:(%x+)") or comment:match("%smemplan:(%x+)")
  local budget = tonumber(comment:match("%f[%S]budget:(%d+)") or comment:match("^budget:(%d+)"))
  if not hash or #hash ~= 64 or not budget then return slurm.SUCCESS end
  local cfg, cerr = load_config()
  if not cfg then
    slurm.log_error("memplan: %s", cerr)
    return slurm.SUCCESS
  end
  local names, need_daemon = {}, false
  for n in job_desc.partition:gmatch("[^,]+") do
    names[#names + 1] = n
    local p = cfg.partitions[n]
    if p then
      p.bytes = p.usable
      if not p.usable then need_daemon = true end
    end
  end
  if need_daemon then
    local ok, _, why = ask_fit(cfg, hash)
    if ok ~= true then
      slurm.log_info("memplan: job %s moved to %s unchecked: %s", tostring(job_rec.job_id), job_desc.partition,
                     tostring(why or ok))
      return slurm.SUCCESS
    end
  end
  for _, n in ipairs(names) do
    local p = cfg.partitions[n]
    if p and p.bytes < budget then
      -- Slurm 22.05 shows no message from job_modify: the user sees
      -- "Unspecified error", slurmctld's log says why
      slurm.log_info("memplan: job %s not moved: its plan was made for %s; partition %s (%s) has %s usable",
                     tostring(job_rec.job_id), human(budget), p.name, p.gpu, human(p.bytes))
      return slurm.ERROR
    end
  end
  return slurm.SUCCESS
end

---------------------------------------------------------------- Slurm's entry points

function slurm_job_submit(job_desc, part_list, submit_uid)
  local ok, rc = pcall(MP.check, job_desc, part_list)
  if ok then return rc end
  -- a fault here must never reject or stall jobs: log it and let the job be
  slurm.log_error("memplan: job_submit.lua failed: %s", tostring(rc))
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  local ok, rc = pcall(MP.modify, job_desc, job_rec)
  if ok then return rc end
  slurm.log_error("memplan: job_submit.lua failed: %s", tostring(rc))
  return slurm.SUCCESS
end

return slurm.SUCCESS
