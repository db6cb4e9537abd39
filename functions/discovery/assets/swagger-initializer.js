// Swagger UI's start-up for /docs: the API's OpenAPI document, deep links, the standalone
// layout (what utoipa-swagger-ui's `Config::from("/openapi.json")` wrote before, kept as a file).
window.onload = function () {
  window.ui = SwaggerUIBundle({
    dom_id: "#swagger-ui",
    url: "/openapi.json",
    deepLinking: true,
    layout: "StandaloneLayout",
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
  });
};
