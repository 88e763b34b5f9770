"""The Gradio UI: the app factory (app.build_app), the explainer component, the live session, the decode runner."""
