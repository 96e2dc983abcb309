-- wrk script: POST one request body (path in $BODY) as JSON.
local path = os.getenv("BODY") or "examples/requests/admit-create-default-class.json"
local file = assert(io.open(path, "rb"), "cannot read " .. path)
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"
