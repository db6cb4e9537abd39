// Swagger UI's start-up for /docs: the API's OpenAPI document, deep links, the base layout
// (this API's document only: no top bar to load another, so no standalone preset to ship).
window.onload = function () {
  window.ui = SwaggerUIBundle({
    dom_id: "#swagger-ui",
    url: "/openapi.json",
    deepLinking: true,
    layout: "BaseLayout",
    presets: [SwaggerUIBundle.presets.apis],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
  });
};
