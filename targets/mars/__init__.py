"""mars"""
