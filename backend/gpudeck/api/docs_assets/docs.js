// GPUDeck's /docs: Swagger UI from GPUDeck's own assets, signed in with the dashboard's token.
// The token comes from the link's #token= fragment (never sent to a server) or from the
// dashboard's sessionStorage copy in this tab; every request Swagger UI makes carries it, the
// schema's own fetch included (/openapi.json needs a token like every route).
(function () {
  "use strict";
  var KEY = "gpudeck.token";

  function takeToken() {
    var params = new URLSearchParams(window.location.hash.slice(1));
    var fromLink = params.get("token");
    if (fromLink) {
      try { sessionStorage.setItem(KEY, fromLink); } catch (e) { /* memory is enough */ }
      params.delete("token");
      var rest = params.toString();
      history.replaceState(null, "", window.location.pathname + (rest ? "#" + rest : ""));
      return fromLink;
    }
    try { return sessionStorage.getItem(KEY); } catch (e) { return null; }
  }

  // A sign-in link pasted into an open tab changes only the fragment: start again with it.
  window.addEventListener("hashchange", function () {
    if (window.location.hash.indexOf("token=") >= 0) window.location.reload();
  });
  var token = takeToken();
  var form = document.getElementById("gpudeck-token");
  if (!token) {
    form.hidden = false;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var value = document.getElementById("gpudeck-token-value").value.trim();
      if (value) {
        try { sessionStorage.setItem(KEY, value); } catch (e) { /* reload needs it */ }
        window.location.reload();
      }
    });
    return;
  }
  var ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: false,
    requestInterceptor: function (request) {
      if (!request.headers.Authorization) request.headers.Authorization = "Bearer " + token;
      return request;
    },
    onComplete: function () { ui.preauthorizeApiKey("bearer", token); },
  });
  window.ui = ui;
})();
