// Cairn's GraphiQL fetcher: queries and mutations as JSON POSTs, and
// subscriptions as server-sent events on the same endpoint, so nothing beyond
// the bundles next to this file is needed. It sends the token the portal
// signed in with (kept in this tab's sessionStorage), unless the Headers tab
// sets another: {"Authorization": "Bearer cairn_..."}.
(function () {
  var endpoint = new URL("../graphql", window.location.href).toString();

  function signedInToken() {
    try {
      return window.sessionStorage.getItem("cairn.token") || "";
    } catch (e) {
      return "";
    }
  }

  // withToken adds the signed-in token unless the caller's headers carry a
  // token of their own; an empty "Bearer " placeholder is no token.
  function withToken(headers) {
    var out = Object.assign({}, headers);
    var auth = out.Authorization || out.authorization || "";
    delete out.authorization;
    if (/^Bearer\s*$/i.test(auth.trim())) auth = "";
    var token = signedInToken();
    if (!auth && token) auth = "Bearer " + token;
    if (auth) out.Authorization = auth;
    else delete out.Authorization;
    return out;
  }

  function isSubscription(params) {
    var q = params.query || "";
    var name = params.operationName;
    var re = /(^|[^\w])subscription(\s+(\w+))?/g;
    var m;
    while ((m = re.exec(q)) !== null) {
      if (!name || m[3] === name) return true;
    }
    return false;
  }

  async function* sse(params, headers) {
    var resp = await fetch(endpoint, {
      method: "POST",
      headers: Object.assign({ "Content-Type": "application/json", Accept: "text/event-stream" }, headers),
      body: JSON.stringify(params),
    });
    if (!resp.ok || !(resp.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      yield await resp.json();
      return;
    }
    var reader = resp.body.getReader();
    var decoder = new TextDecoder();
    var buf = "";
    for (;;) {
      var chunk = await reader.read();
      if (chunk.done) return;
      buf += decoder.decode(chunk.value, { stream: true });
      var cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        var frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        var event = "message", data = "";
        frame.split("\n").forEach(function (line) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        });
        if (event === "complete") return;
        if (event === "next" && data) yield JSON.parse(data);
      }
    }
  }

  function fetcher(params, opts) {
    var headers = withToken((opts && opts.headers) || {});
    if (isSubscription(params)) return sse(params, headers);
    return fetch(endpoint, {
      method: "POST",
      headers: Object.assign({ "Content-Type": "application/json", Accept: "application/json" }, headers),
      body: JSON.stringify(params),
    }).then(function (r) { return r.json(); });
  }

  var root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(React.createElement(GraphiQL, {
    fetcher: fetcher,
    defaultEditorToolsVisibility: true,
    defaultHeaders: JSON.stringify(signedInToken() ? {} : { Authorization: "Bearer " }, null, 2),
    defaultQuery: "# Signed in to the portal in this tab? Your token is sent. Else put one in the Headers tab below, then run:\n{\n  viewer { role tenantId permissions }\n  nodes(first: 10) { edges { node { id hostname status } } }\n}\n",
  }));
})();
