-- Health of an OCM ManagedClusterAddOn (one add-on on one managed cluster), from the conditions
-- addonops' controller writes (Progressing with the seed's reasons, Configured) and the add-on's
-- Available and Degraded conditions. In this order:
--   * no conditions yet -> Progressing;
--   * Configured=False with reason ConfigurationUnsupported, ConfigurationNotFound or
--     ConfigurationForbidden: a config in spec.configs is of a type the add-on does not support,
--     or cannot be read (missing, or the controller may not read its kind), so the controller
--     cannot configure the add-on at all -> Degraded (checked before the next rule: such a config
--     never becomes a desiredConfig);
--   * a config named in spec.configs is not among status.configReferences[].desiredConfig: the
--     controller has not seen the change yet -> Progressing;
--   * Progressing reason InstallFailed, UpgradeFailed or RollbackFailed (or OCM's Failed,
--     ConfigurationUnsupported) -> Degraded;
--   * Progressing=True (Installing, Upgrading, RollingBack, OCM's Progressing) -> Progressing;
--   * Configured=False: the cluster waits for its turn in the rollout -> Progressing;
--   * Progressing is not False with a success reason (InstallSucceed, UpgradeSucceed,
--     RollbackSucceeded, OCM's Completed), e.g. still missing or OCM's WaitingForManifestApplied -> Progressing;
--   * Degraded=True or Available=False -> Degraded;
--   * Available present but not True (Unknown: no lease or probe result yet) -> Progressing;
--   * otherwise (Available=True, or no health reporting at all) -> Healthy.
-- The Flux healthCheckExprs (health/flux) and the status command (internal/rolloutview) apply the
-- same rules; health/*_test.go checks all three against this directory's testdata.
--
-- Written for Argo CD's default environment for custom scripts: only the base, table and package
-- libraries (no string or math), the object in the global `obj`.
-- kstatus compatibility: none; OCM add-on objects have no Ready/Reconciling conditions.

local FAILED = { InstallFailed = true, UpgradeFailed = true, RollbackFailed = true, Failed = true, ConfigurationUnsupported = true }
local SUCCEEDED = { InstallSucceed = true, UpgradeSucceed = true, RollbackSucceeded = true, Completed = true }
local UNCONFIGURABLE = { ConfigurationUnsupported = true, ConfigurationNotFound = true, ConfigurationForbidden = true }

local function str(v)
  if v == nil then
    return ""
  end
  return v
end

local function list(v)
  if v == nil then
    return {}
  end
  return v
end

local function describe(c)
  local gr = str(c.resource)
  if str(c.group) ~= "" then
    gr = gr .. "." .. c.group
  end
  if str(c.namespace) == "" then
    return gr .. " " .. str(c.name)
  end
  return gr .. " " .. c.namespace .. "/" .. str(c.name)
end

local function isDesired(status, c)
  for _, r in ipairs(list(status.configReferences)) do
    local d = r.desiredConfig
    if str(r.group) == str(c.group) and str(r.resource) == str(c.resource) and d ~= nil
      and str(d.name) == str(c.name) and str(d.namespace) == str(c.namespace) then
      return true
    end
  end
  return false
end

local hs = {}
local status = obj.status
if status == nil or status.conditions == nil or #status.conditions == 0 then
  hs.status = "Progressing"
  hs.message = "waiting for the add-on's status"
  return hs
end

local conditions = {}
for _, c in ipairs(status.conditions) do
  if c.type ~= nil and conditions[c.type] == nil then
    conditions[c.type] = c
  end
end

local configured = conditions["Configured"]
if configured ~= nil and configured.status == "False" and UNCONFIGURABLE[configured.reason] then
  hs.status = "Degraded"
  hs.message = str(configured.reason) .. ": " .. str(configured.message)
  return hs
end

if obj.spec ~= nil then
  for _, c in ipairs(list(obj.spec.configs)) do
    if str(c.name) ~= "" and not isDesired(status, c) then
      hs.status = "Progressing"
      hs.message = "waiting for the controller to pick up " .. describe(c)
      return hs
    end
  end
end

local progressing = conditions["Progressing"]
if progressing ~= nil and FAILED[progressing.reason] then
  hs.status = "Degraded"
  hs.message = str(progressing.reason) .. ": " .. str(progressing.message)
  return hs
end
if progressing ~= nil and progressing.status == "True" then
  hs.status = "Progressing"
  hs.message = str(progressing.reason) .. ": " .. str(progressing.message)
  return hs
end
if configured ~= nil and configured.status == "False" then
  hs.status = "Progressing"
  hs.message = "waiting for its turn in the rollout: " .. str(configured.message)
  return hs
end
if progressing == nil or progressing.status ~= "False" or not SUCCEEDED[progressing.reason] then
  hs.status = "Progressing"
  if progressing == nil then
    hs.message = "waiting for the rollout to reach this cluster"
  else
    hs.message = str(progressing.reason) .. ": " .. str(progressing.message)
  end
  return hs
end
local degraded = conditions["Degraded"]
if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = "Degraded: " .. str(degraded.message)
  return hs
end
local available = conditions["Available"]
if available ~= nil and available.status == "False" then
  hs.status = "Degraded"
  hs.message = "not available: " .. str(available.message)
  return hs
end
if available ~= nil and available.status ~= "True" then
  hs.status = "Progressing"
  hs.message = "availability not known yet: " .. str(available.message)
  return hs
end
hs.status = "Healthy"
hs.message = str(progressing.reason) .. ": " .. str(progressing.message)
return hs
