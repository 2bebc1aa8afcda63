-- Health of an OCM ClusterManagementAddOn, read from the rollout status addonops' controller
-- writes: one status.installProgressions[] entry per spec.installStrategy.placements[] entry, with
-- the configs the placement should run (configReferences[].desiredConfig) and a Progressing
-- condition whose reason says where the rollout stands.
--
-- The controller writes Progressing=True while time alone will finish the rollout and
-- Progressing=False once it cannot go on by itself; the reason then tells success, a pause, or a
-- problem a person must fix (internal/addonstatus ClassOf). Per placement, in this order:
--   * no progression for it yet, or a config named in the spec (the placement's configs, or a
--     default config the placement does not override) is not among its desiredConfigs: the
--     controller has not seen the change yet -> Progressing. (This is what keeps Argo CD from
--     calling a freshly synced config change Healthy on the old status; it relies on config
--     changes renaming the config, as the config-hash function does.)
--   * Progressing=False with a success reason (InstallSucceed, UpgradeSucceed, RollbackSucceeded,
--     or OCM's Completed) -> Healthy;
--   * Progressing=False with reason Manual: the progression is from before the install strategy
--     became Placements again, and the controller has not taken the placement over yet ->
--     Progressing;
--   * Progressing=False with reason Paused: a person paused the rollout; a resume continues it ->
--     Suspended;
--   * Progressing=False with reason VerificationInconclusive: a batch's verification could not
--     tell; a person promotes or aborts -> Suspended;
--   * Progressing=False with any other reason (InstallFailed, UpgradeFailed, RollbackFailed,
--     Aborted, ClustersNotConfigurable, WaitingForCanary for a canary that cannot pass without
--     help, PlacementNotFound, ConfigurationNotFound, InvalidMaintenanceWindows, ...) -> Degraded;
--   * otherwise (Progressing=True: Installing, Upgrading, RollingBack, Aborting, WaitingForWindow
--     for a closed maintenance window, WaitingForCanary for a canary still rolling out, OCM's
--     Progressing; no condition) -> Progressing.
-- An add-on OCM's addon-manager rolls out has the same rules on OCM's reasons: Progressing (True),
-- Completed (False, Healthy), anything else False (OCM's API also defines Failed) Degraded.
-- The add-on is Degraded if any placement is, else Progressing if any placement is, else
-- Suspended if any placement is, else Healthy.
-- Install strategy Manual -> Healthy: nothing rolls out from this object (the controller keeps the
-- old progressions as history, with reason Manual).
-- The Flux healthCheckExprs (health/flux) and the status command (internal/rolloutview) apply the
-- same rules; health/*_test.go checks all three against this directory's testdata.
--
-- Written for Argo CD's default environment for custom scripts: only the base, table and package
-- libraries (no string or math), the object in the global `obj`.
-- kstatus compatibility: none; OCM add-on objects have no Ready/Reconciling conditions.

local SUCCEEDED = { InstallSucceed = true, UpgradeSucceed = true, RollbackSucceeded = true, Completed = true }
local RESERVED = "__reserved_no_default__"

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

-- A usable config reference: OCM ignores empty names and the name its API conversion reserves.
local function valid(name)
  return name ~= nil and name ~= "" and name ~= RESERVED
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

-- Default configs in either API version: v1alpha1 supportedConfigs[].defaultConfig, v1beta1
-- defaultConfigs[].
local function defaultConfigs(spec)
  local out = {}
  for _, s in ipairs(list(spec.supportedConfigs)) do
    if s.defaultConfig ~= nil and valid(s.defaultConfig.name) then
      table.insert(out, { group = s.group, resource = s.resource, namespace = s.defaultConfig.namespace, name = s.defaultConfig.name })
    end
  end
  for _, d in ipairs(list(spec.defaultConfigs)) do
    if valid(d.name) then
      table.insert(out, d)
    end
  end
  return out
end

local function placementConfigs(p)
  local out = {}
  for _, c in ipairs(list(p.configs)) do
    if valid(c.name) then
      table.insert(out, c)
    end
  end
  return out
end

local function sameGroupResource(a, b)
  return str(a.group) == str(b.group) and str(a.resource) == str(b.resource)
end

local function isDesired(ip, c)
  for _, r in ipairs(list(ip.configReferences)) do
    local d = r.desiredConfig
    if sameGroupResource(r, c) and d ~= nil and str(d.name) == str(c.name) and str(d.namespace) == str(c.namespace) then
      return true
    end
  end
  return false
end

-- The first config the spec names for placement p that its progression ip does not show as
-- desired yet, or nil.
local function unseenConfig(p, ip, defaults)
  local own = placementConfigs(p)
  for _, c in ipairs(own) do
    if not isDesired(ip, c) then
      return c
    end
  end
  for _, d in ipairs(defaults) do
    local overridden = false
    for _, c in ipairs(own) do
      if sameGroupResource(c, d) then
        overridden = true
      end
    end
    if not overridden and not isDesired(ip, d) then
      return d
    end
  end
  return nil
end

local function progressingCondition(ip)
  for _, c in ipairs(list(ip.conditions)) do
    if c.type == "Progressing" then
      return c
    end
  end
  return nil
end

local function placementHealth(p, progressions, defaults)
  local key = str(p.namespace) .. "/" .. str(p.name)
  local ip = nil
  for _, candidate in ipairs(progressions) do
    if candidate.namespace == p.namespace and candidate.name == p.name then
      ip = candidate
      break
    end
  end
  if ip == nil then
    return "Progressing", key .. ": waiting for the controller to report this placement's rollout"
  end
  local unseen = unseenConfig(p, ip, defaults)
  if unseen ~= nil then
    return "Progressing", key .. ": waiting for the controller to pick up " .. describe(unseen)
  end
  local c = progressingCondition(ip)
  if c == nil then
    return "Progressing", key .. ": waiting for the controller to report this placement's progress"
  end
  if c.status == "False" and SUCCEEDED[c.reason] then
    return "Healthy", key .. ": " .. str(c.message)
  end
  if c.status == "False" and c.reason == "Manual" then
    return "Progressing", key .. ": waiting for the controller to roll this placement out (its progression is from the Manual install strategy)"
  end
  if c.status == "False" and (c.reason == "Paused" or c.reason == "VerificationInconclusive") then
    return "Suspended", key .. ": " .. str(c.reason) .. ": " .. str(c.message)
  end
  if c.status == "False" then
    return "Degraded", key .. ": " .. str(c.reason) .. ": " .. str(c.message)
  end
  return "Progressing", key .. ": " .. str(c.reason) .. ": " .. str(c.message)
end

local function join(messages)
  local out = ""
  for i, m in ipairs(messages) do
    if i > 1 then
      out = out .. "; "
    end
    out = out .. m
  end
  return out
end

local hs = {}
local spec = obj.spec
if spec == nil then
  spec = {}
end
local strategy = spec.installStrategy
if strategy == nil or strategy.type ~= "Placements" then
  hs.status = "Healthy"
  hs.message = "install strategy is not Placements: no placement rolls this add-on out"
  return hs
end
local placements = list(strategy.placements)
if #placements == 0 then
  hs.status = "Healthy"
  hs.message = "no install placements"
  return hs
end

local progressions = {}
if obj.status ~= nil then
  progressions = list(obj.status.installProgressions)
end
local defaults = defaultConfigs(spec)
local byStatus = { Healthy = {}, Progressing = {}, Suspended = {}, Degraded = {} }
for _, p in ipairs(placements) do
  local status, message = placementHealth(p, progressions, defaults)
  table.insert(byStatus[status], message)
end
for _, status in ipairs({ "Degraded", "Progressing", "Suspended", "Healthy" }) do
  if #byStatus[status] > 0 then
    hs.status = status
    hs.message = join(byStatus[status])
    return hs
  end
end
return hs
