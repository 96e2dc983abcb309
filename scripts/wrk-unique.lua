-- wrk script: POST the body template in $BODY, its "@UID@" marker replaced
-- by a new uid on every request, so each request is a pod the server has
-- not seen. With $PAIR set, requests alternate between $PAIR (first, new
-- uid) and the url's path (same uid): kube-scheduler's filter-then-
-- prioritize of one pod.
local file = assert(io.open(os.getenv("BODY"), "rb"), "cannot read $BODY")
local text = file:read("*a")
file:close()
local at = assert(text:find("@UID@", 1, true), "no @UID@ marker in $BODY")
local head, tail = text:sub(1, at - 1), text:sub(at + 5)
local pair = os.getenv("PAIR")
if pair == "" then pair = nil end
local salt = string.format("%010d", math.random(1, 1e9))
local n = 0
local headers = {["Content-Type"] = "application/json"}

function request()
    local path = nil
    if pair then
        if n % 2 == 0 then path = pair end
        n = n + 1
    else
        n = n + 1
    end
    -- Fixed width: wrk asks for a new request each time a TLS write of a
    -- large body has to wait (it starts over only in its bookkeeping;
    -- OpenSSL goes on from where it stopped, in the new text), so every
    -- request must be as long as the one whose first bytes went out.
    local uid = string.format("wrk-%s-%012d", salt, math.floor((n + 1) / (pair and 2 or 1)))
    return wrk.format("POST", path, headers, head .. uid .. tail)
end
