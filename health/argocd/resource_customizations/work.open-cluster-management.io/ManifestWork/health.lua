-- Health of an OCM ManifestWork from the work agent's Applied and Available conditions, counted
-- only when they were observed at the work's current generation (metadata.generation), so a work
-- that was just changed is never Healthy on the previous version's report. In this order:
--   * Applied=False or Available=False at the current generation -> Degraded;
--   * Applied=True and Available=True at the current generation -> Healthy;
--   * otherwise (no status yet, or a report for an older generation) -> Progressing.
-- These are the rules addonops' controller uses to call a cluster's rollout applied or failed;
-- the Flux healthCheckExprs (health/flux) apply them too, and health/*_test.go checks both against
-- this directory's testdata.
--
-- Written for Argo CD's default environment for custom scripts: only the base, table and package
-- libraries (no string or math), the object in the global `obj`.
-- kstatus compatibility: none; ManifestWork has no Ready/Reconciling conditions and no
-- status.observedGeneration (its conditions carry observedGeneration instead).

local function str(v)
  if v == nil then
    return ""
  end
  return v
end

local generation = 0
if obj.metadata ~= nil and obj.metadata.generation ~= nil then
  generation = obj.metadata.generation
end

local current = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    local observed = c.observedGeneration
    if observed == nil then
      observed = 0
    end
    if (c.type == "Applied" or c.type == "Available") and observed == generation and current[c.type] == nil then
      current[c.type] = c
    end
  end
end

local hs = {}
for _, t in ipairs({ "Applied", "Available" }) do
  local c = current[t]
  if c ~= nil and c.status == "False" then
    hs.status = "Degraded"
    hs.message = t .. "=False at generation " .. generation .. ": " .. str(c.reason) .. ": " .. str(c.message)
    return hs
  end
end
local applied, available = current["Applied"], current["Available"]
if applied ~= nil and applied.status == "True" and available ~= nil and available.status == "True" then
  hs.status = "Healthy"
  hs.message = "Applied and Available at generation " .. generation
  return hs
end
hs.status = "Progressing"
hs.message = "waiting for the work agent to report Applied and Available at generation " .. generation
return hs
